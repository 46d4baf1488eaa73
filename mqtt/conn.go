package mqtt

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// readBuffer is the size of a connection's read buffer: one syscall reads
// many small packets when the broker sends a burst.
const readBuffer = 32 << 10

// watchedConn is the socket under TLS or WebSocket: it notes when bytes
// last came from the broker (Client.Health) and bounds every write.
//
// After every read it has the kernel acknowledge at once what came in
// (quickAck, TCP_QUICKACK on Linux). What the broker sends us that we do
// not answer (the PUBACK of each QoS 1 command) would otherwise wait for
// a delayed acknowledgement, and a broker with Nagle's algorithm on
// (Mosquitto's default) holds its next small write, the next event, until
// that acknowledgement comes.
//
// The write deadline is moved only when less than half of writeTimeout is
// left, so a write fails after between half and all of writeTimeout: one
// deadline change per burst of writes rather than one per write.
//
// A read waits at most silence for the broker, then fails with a
// silenceError: the broker is frozen or gone. Meanwhile the keep-alive
// (conn.keepAlive) pings it, which a live broker answers at once. Only
// time spent waiting in a read counts: a reader held back by a slow
// handler is not taken for a silent broker.
type watchedConn struct {
	net.Conn
	lastRead     *atomic.Int64 // Unix nanoseconds
	writeTimeout time.Duration
	silence      time.Duration
	quickAck     func()     // nil: not a TCP socket
	unread       func() int // received by the kernel, not read yet; nil: not a TCP socket
	mu           sync.Mutex
	deadline     time.Time    // the write deadline
	waiting      atomic.Int64 // Unix ns since when a read waits; 0: none does
}

// silenceError is a read that waited silence for the broker in vain.
type silenceError struct{ after time.Duration }

func (e *silenceError) Error() string {
	return fmt.Sprintf("the broker sent nothing for %s, not even an answer to a ping (frozen or unreachable?)", e.after)
}
func (e *silenceError) Timeout() bool   { return true }
func (e *silenceError) Temporary() bool { return false }

func (c *watchedConn) Read(p []byte) (int, error) {
	now := time.Now()
	_ = c.Conn.SetReadDeadline(now.Add(c.silence))
	c.waiting.Store(now.UnixNano())
	n, err := c.Conn.Read(p)
	c.waiting.Store(0)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
		if c.quickAck != nil {
			c.quickAck()
		}
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &silenceError{after: c.silence}
	}
	return n, err
}

func (c *watchedConn) Write(p []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	if c.deadline.Sub(now) < c.writeTimeout/2 {
		c.deadline = now.Add(c.writeTimeout)
		_ = c.Conn.SetWriteDeadline(c.deadline)
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// The layers above (TLS, WebSocket) may set deadlines of their own during
// their handshakes; the watch keeps its own.
func (c *watchedConn) SetDeadline(time.Time) error      { return nil }
func (c *watchedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *watchedConn) SetWriteDeadline(time.Time) error { return nil }

// conn is one connection to the broker: the socket (under TLS or
// WebSocket when the URL says so), its read buffer, read by the one
// reading goroutine (read.go), and the writer that every packet goes
// through (write.go).
type conn struct {
	nc net.Conn     // what packets are written to and read from
	w  *watchedConn // the socket under it
	r  *bufio.Reader

	// buffered is what the read buffer held when the last packet was
	// handled (Client.Unread, from another goroutine).
	buffered  atomic.Int64
	lastWrite atomic.Int64 // Unix ns

	writer

	closeOnce sync.Once
	dead      chan struct{} // closed when the connection is closed
	err       error         // why; set before dead is closed
}

func newConn(nc net.Conn, w *watchedConn) *conn {
	k := &conn{nc: nc, w: w, r: bufio.NewReaderSize(nc, readBuffer), dead: make(chan struct{})}
	k.lastWrite.Store(time.Now().UnixNano())
	return k
}

// close closes the connection for err (the first reason counts).
func (k *conn) close(err error) {
	k.closeOnce.Do(func() {
		k.err = err
		close(k.dead)
		_ = k.nc.Close()
	})
}

func (k *conn) isDead() bool {
	select {
	case <-k.dead:
		return true
	default:
		return false
	}
}

// reason is why the connection ended: the first error seen, or readErr.
func (k *conn) reason(readErr error) error {
	k.close(readErr)
	return k.err
}

// unread is how many bytes from the broker wait in the connection.
func (k *conn) unread() int {
	if k.isDead() {
		return 0
	}
	n := int(k.buffered.Load())
	if k.w.unread != nil {
		n += k.w.unread()
	}
	return n
}
