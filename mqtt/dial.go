package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/net/proxy"
)

// dial opens a socket to the broker (TCP through the environment's proxy
// settings), watches it (watchedConn) and puts TLS or WebSocket on it when
// the URL's scheme says so.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	u, err := url.Parse(c.opts.Broker)
	if err != nil {
		return nil, err
	}
	var w *watchedConn
	watch := func(raw net.Conn) net.Conn {
		w = &watchedConn{Conn: raw, lastRead: &c.lastRead, writeTimeout: c.opts.PublishTimeout, silence: silenceLimit,
			quickAck: quickAcker(raw), unread: unreadCounter(raw)}
		return w
	}
	tcp := func(ctx context.Context, _, addr string) (net.Conn, error) {
		raw, err := proxy.Dial(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return watch(raw), nil
	}
	var nc net.Conn
	switch u.Scheme {
	case "ws", "wss":
		nc, err = dialWebsocket(ctx, u, c.opts.TLS, tcp)
	case "ssl", "tls", "mqtts", "tcps":
		var raw net.Conn
		if raw, err = tcp(ctx, "tcp", hostPort(u, "8883")); err == nil {
			tc := tls.Client(raw, tlsFor(c.opts.TLS, u))
			if err = tc.HandshakeContext(ctx); err != nil {
				raw.Close()
			}
			nc = tc
		}
	default: // tcp, mqtt
		nc, err = tcp(ctx, "tcp", hostPort(u, "1883"))
	}
	if err != nil {
		return nil, err
	}
	return newConn(nc, w), nil
}

// hostPort is the URL's host with the scheme's default port when it has none.
func hostPort(u *url.URL, port string) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// tlsFor fills in the server name the way tls.Dial would.
func tlsFor(c *tls.Config, u *url.URL) *tls.Config {
	if c == nil {
		c = &tls.Config{}
	}
	if c.ServerName == "" && !c.InsecureSkipVerify {
		c = c.Clone()
		c.ServerName = u.Hostname()
	}
	return c
}

// dialWebsocket opens MQTT over WebSocket (MQTT 3.1.1 §6: binary
// messages, subprotocol "mqtt") on a socket from tcp.
func dialWebsocket(ctx context.Context, u *url.URL, tc *tls.Config, tcp func(context.Context, string, string) (net.Conn, error)) (net.Conn, error) {
	target := *u
	target.User = nil // the handshake refuses URLs with credentials
	var hs handshake
	d := websocket.Dialer{Subprotocols: []string{"mqtt"}, NetDialContext: func(ctx context.Context, n, addr string) (net.Conn, error) {
		raw, err := tcp(ctx, n, addr)
		if err != nil {
			return nil, err
		}
		return hs.watch(raw), nil
	}}
	if u.Scheme == "wss" {
		d.TLSClientConfig = tlsFor(tc, u)
	}
	stop := context.AfterFunc(ctx, hs.abort)
	ws, resp, err := d.DialContext(ctx, target.String(), nil)
	stop()
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	hs.done.Store(true)
	return &wsConn{Conn: ws}, nil
}

// maxHandshakeBytes bounds what a WebSocket handshake may read: a hostile
// server that streams headers without end must not grow the heap.
const maxHandshakeBytes = 64 << 10

// handshake bounds a WebSocket handshake's socket in bytes (until done)
// and in time (abort closes it when the connect deadline passes, whatever
// read deadlines the socket keeps).
type handshake struct {
	mu   sync.Mutex
	conn net.Conn
	read int64
	done atomic.Bool
}

func (h *handshake) watch(c net.Conn) net.Conn {
	h.mu.Lock()
	h.conn = c
	h.mu.Unlock()
	return &handshakeConn{Conn: c, h: h}
}

func (h *handshake) abort() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn != nil && !h.done.Load() {
		h.conn.Close()
	}
}

type handshakeConn struct {
	net.Conn
	h *handshake
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	if c.h.done.Load() {
		return c.Conn.Read(p)
	}
	if c.h.read >= maxHandshakeBytes {
		return 0, fmt.Errorf("mqtt: the WebSocket handshake sent more than %d bytes", maxHandshakeBytes)
	}
	if left := maxHandshakeBytes - c.h.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	c.h.read += int64(n)
	return n, err
}

// wsConn is a WebSocket connection read and written as a byte stream: a
// packet may span messages, and a message may hold several packets.
type wsConn struct {
	*websocket.Conn
	r  io.Reader // the message being read
	wm sync.Mutex
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			kind, r, err := c.NextReader()
			if err != nil {
				return 0, err
			}
			if kind != websocket.BinaryMessage {
				return 0, errors.New("mqtt: the broker sent a WebSocket message that is not binary")
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if err == io.EOF {
			c.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.wm.Lock()
	defer c.wm.Unlock()
	if err := c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}
