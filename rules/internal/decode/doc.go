// Package decode turns a program's JSON text into a model.Program, locating
// every finding by JSON Pointer.
package decode
