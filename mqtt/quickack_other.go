//go:build !linux

package mqtt

import "net"

// quickAcker: TCP_QUICKACK is Linux's; elsewhere delayed acknowledgements
// stay as the system has them.
func quickAcker(net.Conn) func() { return nil }
