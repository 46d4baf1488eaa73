//go:build linux

package mqtt

import (
	"net"

	"golang.org/x/sys/unix"
)

// unreadCounter returns a function reporting the bytes the kernel has
// received on conn that the process has not read yet (SIOCINQ), or nil
// when conn is no TCP socket.
func unreadCounter(conn net.Conn) func() int {
	rc := rawConn(conn)
	if rc == nil {
		return nil
	}
	return func() int {
		n := 0
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		return n
	}
}
