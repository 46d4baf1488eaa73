package mqtt

import (
	"net"
	"syscall"
)

// rawConn is conn's file descriptor access, or nil when conn is no socket.
func rawConn(conn net.Conn) syscall.RawConn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// quickAcker returns a function that makes the kernel acknowledge what
// the connection has received at once (TCP_QUICKACK), or nil when conn is
// no TCP socket.
func quickAcker(conn net.Conn) func() {
	rc := rawConn(conn)
	if rc == nil {
		return nil
	}
	return func() { _ = rc.Control(setQuickAck) }
}

func setQuickAck(fd uintptr) {
	_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
}
