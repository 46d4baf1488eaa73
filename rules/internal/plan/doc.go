// Package plan derives the deploy-mode plan of a compiled program and
// phrases its steps and outcomes in sentences.
package plan
