package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// loadClient is the bench's MQTT 3.1.1 client for the load generator:
// QoS 0 publishes and one QoS 0 subscription over a plain TCP connection,
// one write per publish and one reader goroutine. The load generator
// shares the two CPUs with the server it measures, so it must cost as
// little as possible: no reconnects, no session, no acknowledgements to
// track (the server's own client in package mqtt has all of these).
type loadClient struct {
	conn net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
	wbuf []byte
	rbuf []byte
	done chan struct{}
	err  error // read error that ended the reader, once done is closed
}

// dialLoad connects to broker (tcp://[user:password@]host:port).
func dialLoad(broker, clientID string, timeout time.Duration) (*loadClient, error) {
	if !strings.Contains(broker, "://") {
		broker = "tcp://" + broker
	}
	u, err := url.Parse(broker)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "tcp" && u.Scheme != "mqtt" {
		return nil, fmt.Errorf("bench load generator: broker %s: only tcp:// brokers", u.Redacted())
	}
	conn, err := net.DialTimeout("tcp", u.Host, timeout)
	if err != nil {
		return nil, err
	}
	c := &loadClient{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), done: make(chan struct{})}
	// CONNECT: protocol "MQTT" level 4, clean session, keep-alive off.
	var flags byte = 0x02
	var body []byte
	body = appendStr(body, "MQTT")
	body = append(body, 4, 0, 0, 0) // level, flags (patched below), keep-alive 0
	body = appendStr(body, clientID)
	if user := u.User.Username(); user != "" {
		flags |= 0x80
		body = appendStr(body, user)
		if pw, ok := u.User.Password(); ok {
			flags |= 0x40
			body = appendStr(body, pw)
		}
	}
	body[7] = flags
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(packet(0x10, body)); err != nil {
		conn.Close()
		return nil, err
	}
	typ, p, err := c.readPacket()
	if err != nil || typ != 0x20 || len(p) < 2 || p[1] != 0 {
		conn.Close()
		return nil, fmt.Errorf("bench load generator: connect to %s refused (%#x %v %v)", u.Redacted(), typ, p, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return c, nil
}

// subscribe subscribes filter at QoS 0 and calls fn for every message on
// the reader goroutine. It must be called once, before any publish.
func (c *loadClient) subscribe(filter string, fn func(topic string, payload []byte)) error {
	body := appendStr([]byte{0, 1}, filter) // packet id 1
	body = append(body, 0)                  // QoS 0
	if _, err := c.conn.Write(packet(0x82, body)); err != nil {
		return err
	}
	typ, p, err := c.readPacket()
	if err != nil || typ != 0x90 || len(p) < 3 || p[2] >= 0x80 {
		return fmt.Errorf("bench load generator: subscribe %s refused (%#x %v %v)", filter, typ, p, err)
	}
	go func() {
		defer close(c.done)
		for {
			typ, p, err := c.readPacket()
			if err != nil {
				c.err = err
				return
			}
			if typ&0xf0 != 0x30 || len(p) < 2 {
				continue // only QoS 0 publishes are expected
			}
			n := int(binary.BigEndian.Uint16(p))
			if 2+n > len(p) {
				continue
			}
			off := 2 + n
			if typ&0x06 != 0 { // QoS > 0 carries a packet id
				off += 2
			}
			if off <= len(p) {
				fn(string(p[2:2+n]), p[off:])
			}
		}
	}()
	return nil
}

// publish sends a QoS 0 PUBLISH in one write.
func (c *loadClient) publish(topic string, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	rem := 2 + len(topic) + len(payload)
	b := append(c.wbuf[:0], 0x30)
	b = appendLen(b, rem)
	b = appendStr(b, topic)
	b = append(b, payload...)
	c.wbuf = b
	_, err := c.conn.Write(b)
	return err
}

func (c *loadClient) close() {
	_, _ = c.conn.Write([]byte{0xe0, 0}) // DISCONNECT
	c.conn.Close()
}

// readPacket reads one packet: its first byte and its body (reused by the
// next call: callers copy what they keep).
func (c *loadClient) readPacket() (byte, []byte, error) {
	typ, err := c.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, mult := 0, 1
	for i := 0; ; i++ {
		b, err := c.r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		n += int(b&0x7f) * mult
		if b&0x80 == 0 {
			break
		}
		if mult *= 128; i == 3 {
			return 0, nil, errors.New("bench load generator: malformed remaining length")
		}
	}
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n)
	}
	p := c.rbuf[:n]
	if _, err := io.ReadFull(c.r, p); err != nil {
		return 0, nil, err
	}
	return typ, p, nil
}

func packet(typ byte, body []byte) []byte {
	return append(appendLen([]byte{typ}, len(body)), body...)
}

func appendLen(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

func appendStr(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}
