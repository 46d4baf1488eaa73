// Package core holds what every stage of rules shares: the limits, the
// closed sets of diagnostic codes and run and step statuses, located JSON
// decoding, value sizes and English phrasing.
package core
