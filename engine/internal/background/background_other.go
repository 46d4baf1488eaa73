//go:build !linux

package background

// Lower does nothing here (see the Linux version).
func Lower() {}
