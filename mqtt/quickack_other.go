//go:build !linux

package mqtt

import "net"

// quickAcker: TCP_QUICKACK is Linux's; elsewhere delayed acknowledgements
// stay as the system has them.
func quickAcker(net.Conn) func() { return nil }

// unreadCounter: SIOCINQ is read on Linux only; elsewhere only the read
// buffer's bytes are counted.
func unreadCounter(net.Conn) func() int { return nil }
