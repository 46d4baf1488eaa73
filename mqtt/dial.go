package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
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
	d := websocket.Dialer{NetDialContext: tcp, Subprotocols: []string{"mqtt"}}
	if u.Scheme == "wss" {
		d.TLSClientConfig = tlsFor(tc, u)
	}
	ws, resp, err := d.DialContext(ctx, target.String(), nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	return &wsConn{Conn: ws}, nil
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
