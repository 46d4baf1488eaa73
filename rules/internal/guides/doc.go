// Package guides holds the teaching guides of automation/1 (embedded
// Markdown and the generated closed-sets guide) and serves them by id and
// section.
package guides
