package mqtt

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/net/proxy"
)

// watchedConn is the connection under TLS and the read buffer: it notes
// when bytes last came from the broker (Client.Health) and puts a deadline
// on every write. paho sets one only for PUBLISH packets; without it, a
// PINGREQ or PUBACK written to a broker that stopped reading (frozen, its
// socket buffer full) would block its goroutine for good, and the
// keepalive would never notice the broker is gone.
//
// After every read it has the kernel acknowledge at once what came in
// (quickAck, TCP_QUICKACK on Linux). What the broker sends us that we do
// not answer (the PUBACK of each QoS 1 command) would otherwise wait for
// a delayed acknowledgement, and a broker with Nagle's algorithm on
// (Mosquitto's default) holds its next small write, the next event, until
// that acknowledgement comes.
//
// The write deadline is moved only when less than half of writeTimeout is
// left, or more than all of it (paho's around the CONNECT handshake), so
// a write fails after between half and all of writeTimeout. paho's
// clearing of a deadline is ignored (the rolling one stays): one
// deadline change per command instead of three.
//
// A read waits at most silence for the broker (when positive), then fails
// with a silenceError: the broker is frozen or gone. Meanwhile, from
// pingAfter on, keepPinging writes a PINGREQ every pingAfter, which a
// live broker answers at once. Only time spent waiting in a read counts,
// and the pings do not depend on the reading goroutine: a reader held
// back by a slow handler (a PINGRESP queued behind events) is not taken
// for a silent broker, as paho's ping timeout would take it, nor does the
// broker's keepalive drop the connection.
type watchedConn struct {
	net.Conn
	lastRead     *atomic.Int64 // Unix nanoseconds
	writeTimeout time.Duration
	silence      time.Duration
	quickAck     func()     // nil: not a TCP socket
	unread       func() int // received by the kernel, not read yet; nil: not a TCP socket
	mu           sync.Mutex
	deadline     time.Time    // the write deadline
	pahoRead     atomic.Int64 // Unix ns of paho's read deadline (around CONNECT); 0: none
	waiting      atomic.Int64 // Unix ns since when a read waits; 0: none does
	closeOnce    sync.Once
	closed       chan struct{}
}

// silenceError is a read that waited silence for the broker in vain.
type silenceError struct{ after time.Duration }

func (e *silenceError) Error() string {
	return fmt.Sprintf("the broker sent nothing for %s, not even an answer to a ping (frozen or unreachable?)", e.after)
}
func (e *silenceError) Timeout() bool   { return true }
func (e *silenceError) Temporary() bool { return false }

func (c *watchedConn) Read(p []byte) (int, error) {
	ours := false
	if c.silence > 0 {
		now := time.Now()
		d := now.Add(c.silence)
		if pd := c.pahoRead.Load(); pd == 0 || d.UnixNano() < pd {
			ours = true
		} else {
			d = time.Unix(0, pd)
		}
		_ = c.Conn.SetReadDeadline(d)
		c.waiting.Store(now.UnixNano())
		defer c.waiting.Store(0)
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
		if c.quickAck != nil {
			c.quickAck()
		}
	}
	if err != nil && ours && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &silenceError{after: c.silence}
	}
	return n, err
}

// keepPinging calls ping every pingAfter while a read waits for the
// broker, until the connection is closed.
func (c *watchedConn) keepPinging(ping func()) {
	t := time.NewTicker(pingAfter / 4)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-c.closed:
			return
		case now := <-t.C:
			if w := c.waiting.Load(); w != 0 && now.Sub(time.Unix(0, w)) >= pingAfter && now.Sub(last) >= pingAfter {
				last = now
				ping()
			}
		}
	}
}

// Close closes the connection and stops keepPinging.
func (c *watchedConn) Close() error {
	if c.closed != nil {
		c.closeOnce.Do(func() { close(c.closed) })
	}
	return c.Conn.Close()
}

// SetReadDeadline records paho's read deadline (Read applies it, or the
// silence bound when sooner).
func (c *watchedConn) SetReadDeadline(t time.Time) error {
	if c.silence <= 0 {
		return c.Conn.SetReadDeadline(t)
	}
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	c.pahoRead.Store(ns)
	return nil
}

// SetDeadline sets the read deadline, and the write deadline as
// SetWriteDeadline does (paho sets both around the CONNECT handshake, then
// clears them).
func (c *watchedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetWriteDeadline sets a write deadline; a zero one (paho's, after each
// PUBLISH) leaves the deadline as it is, so no write is ever unbounded.
func (c *watchedConn) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *watchedConn) Write(p []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	if left := c.deadline.Sub(now); left < c.writeTimeout/2 || left > c.writeTimeout {
		c.deadline = now.Add(c.writeTimeout)
		_ = c.Conn.SetWriteDeadline(c.deadline)
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// openConnection is paho's dialer for c (openConn with c's watch; QoS 0
// publishes are delivered by the connection, see demuxConn).
func (c *Client) openConnection(uri *url.URL, o paho.ClientOptions) (net.Conn, error) {
	c.lastRead.Store(time.Now().UnixNano()) // a new connection: nothing overdue yet
	var w *watchedConn
	conn, err := openConn(uri, o, c.inbound(), func(raw net.Conn) net.Conn {
		w = &watchedConn{Conn: raw, lastRead: &c.lastRead, writeTimeout: c.opts.PublishTimeout, silence: silenceLimit,
			quickAck: quickAcker(raw), unread: unreadCounter(raw), closed: make(chan struct{})}
		return w
	})
	if err == nil {
		d := conn.(*demuxConn)
		if w != nil {
			go w.keepPinging(d.ping)
		}
		c.conn.Store(&connParts{w: w, d: d})
	}
	return conn, err
}

// connParts are the current connection's layers Unread looks into.
type connParts struct {
	w *watchedConn
	d *demuxConn
}

// Unread reports how many bytes from the broker wait in the current
// connection, received but not handled yet: in the kernel's socket buffer
// (Linux) and in the read buffer. Past capacity this is where events
// queue, before the broker's own queue.
func (c *Client) Unread() int {
	p := c.conn.Load()
	if p == nil || p.d.dead.Load() {
		return 0
	}
	n := int(p.d.buffered.Load())
	if p.w != nil && p.w.unread != nil {
		n += p.w.unread()
	}
	return n
}

// openConn dials the broker like paho does (TCP through the environment's
// proxy settings, TLS, WebSocket), wraps the raw connection with watch and
// reads through a demuxConn that hands QoS 0 and 1 publishes to in.
func openConn(uri *url.URL, o paho.ClientOptions, in inbound, watch func(net.Conn) net.Conn) (net.Conn, error) {
	dialer := o.Dialer
	if dialer == nil {
		dialer = &net.Dialer{Timeout: o.ConnectTimeout}
	}
	var (
		conn net.Conn
		err  error
	)
	switch uri.Scheme {
	case "ws", "wss":
		u := *uri
		u.User = nil // gorilla refuses URLs with credentials (paho #623)
		var tlsc *tls.Config
		if uri.Scheme == "wss" {
			tlsc = o.TLSConfig
		}
		conn, err = paho.NewWebsocket(u.String(), tlsc, o.ConnectTimeout, o.HTTPHeaders, o.WebsocketOptions)
		if err == nil {
			conn = watch(conn)
		}
	case "mqtt", "tcp":
		conn, err = proxy.FromEnvironmentUsing(dialer).Dial("tcp", uri.Host)
		if err == nil {
			conn = watch(conn)
		}
	case "ssl", "tls", "mqtts", "mqtt+ssl", "tcps":
		var raw net.Conn
		raw, err = proxy.FromEnvironmentUsing(dialer).Dial("tcp", uri.Host)
		if err == nil {
			tc := tls.Client(watch(raw), tlsFor(o.TLSConfig, uri))
			if err = tc.Handshake(); err != nil {
				raw.Close()
			} else {
				conn = tc
			}
		}
	default:
		err = errors.New("unknown protocol " + uri.Scheme)
	}
	if err != nil {
		return nil, err
	}
	return newDemuxConn(conn, in), nil
}

// tlsFor fills in the server name the way tls.Dial would.
func tlsFor(c *tls.Config, uri *url.URL) *tls.Config {
	if c == nil {
		c = &tls.Config{}
	}
	if c.ServerName == "" && !c.InsecureSkipVerify {
		c = c.Clone()
		c.ServerName = uri.Hostname()
	}
	return c
}
