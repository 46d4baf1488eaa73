package mqtt

import (
	"net"
	"syscall"
)

// quickAcker returns a function that makes the kernel acknowledge what
// the connection has received at once (TCP_QUICKACK), or nil when conn is
// no TCP socket.
func quickAcker(conn net.Conn) func() {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func() { _ = rc.Control(setQuickAck) }
}

func setQuickAck(fd uintptr) {
	_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
}
