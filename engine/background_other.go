//go:build !linux

package engine

// background does nothing here (see the Linux version).
func background() {}
