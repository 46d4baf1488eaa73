// Package validate checks a decoded program against the caller's catalog
// with closed diagnostics, binds execute's input, and lowers a valid program
// into its run form.
package validate
