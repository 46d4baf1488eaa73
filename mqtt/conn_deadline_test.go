package mqtt

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// TestWritesStayBoundedAfterPahoClearsTheDeadline: paho sets a write
// deadline around each PUBLISH and clears it after; the connection keeps
// its rolling deadline instead, so a later write (a PUBACK, a PINGREQ) to
// a broker that stopped reading still fails within writeTimeout.
func TestWritesStayBoundedAfterPahoClearsTheDeadline(t *testing.T) {
	for name, set := range map[string]func(net.Conn, time.Time) error{
		"around a PUBLISH":   net.Conn.SetWriteDeadline,
		"around the CONNECT": net.Conn.SetDeadline,
	} {
		t.Run(name, func(t *testing.T) { writeBoundedAfterClear(t, set) })
	}
}

// writeBoundedAfterClear: after a write, paho sets a deadline with set and
// clears it; a write to a peer that stopped reading still fails in time.
func writeBoundedAfterClear(t *testing.T, set func(net.Conn, time.Time) error) {
	const timeout = 300 * time.Millisecond
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var last atomic.Int64
	c := &watchedConn{Conn: a, lastRead: &last, writeTimeout: timeout}
	go func() { _, _ = b.Read(make([]byte, 64)) }() // the broker reads one packet, then freezes
	if _, err := c.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := set(c, time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	if err := set(c, time.Time{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := c.Write([]byte("puback")); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write to a frozen peer: %v, want a deadline error", err)
		}
		if took := time.Since(start); took > timeout+2*time.Second {
			t.Fatalf("write failed after %s, want within %s", took, timeout)
		}
	case <-time.After(timeout + 5*time.Second):
		t.Fatal("a write after paho cleared its deadline blocked (no deadline)")
	}
}
