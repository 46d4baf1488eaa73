package mqtt

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"net/url"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/net/proxy"
)

// readBuffer is the size of a connection's read buffer: one syscall reads
// many small packets when the broker sends a burst.
const readBuffer = 32 << 10

// bufferedConn reads through a bufio.Reader. paho reads a packet's fixed
// header and its remaining length one byte at a time straight from the
// connection, which costs three or more read syscalls per packet; behind a
// buffer a whole burst of packets costs one.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func newBufferedConn(c net.Conn) net.Conn {
	return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer)}
}

// openConnection dials the broker like paho does (TCP through the
// environment's proxy settings, TLS, WebSocket) and buffers reads.
func openConnection(uri *url.URL, o paho.ClientOptions) (net.Conn, error) {
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
	case "mqtt", "tcp":
		conn, err = proxy.FromEnvironmentUsing(dialer).Dial("tcp", uri.Host)
	case "ssl", "tls", "mqtts", "mqtt+ssl", "tcps":
		var raw net.Conn
		raw, err = proxy.FromEnvironmentUsing(dialer).Dial("tcp", uri.Host)
		if err == nil {
			tc := tls.Client(raw, tlsFor(o.TLSConfig, uri))
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
	return newBufferedConn(conn), nil
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
