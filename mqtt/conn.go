package mqtt

// One connection to the broker, both ways on its socket: the one reading
// goroutine and the packets it decodes (a PUBLISH delivered and then
// acknowledged, a PUBACK handed to the session), the one writer every
// packet goes through, and the watched socket under both.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// readBuffer is the size of a connection's read buffer: one syscall reads
// many small packets when the broker sends a burst.
const readBuffer = 32 << 10

// conn is one connection to the broker: the socket (under TLS or
// WebSocket when the URL says so), its read buffer, read by the one
// reading goroutine (readLoop), and the writer that every packet goes
// through (writePacket).
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

// preallocMax: a PUBLISH body up to this size is read into a buffer of its
// size at once; a bigger one grows as its bytes arrive rather than at the
// length the header claims.
const preallocMax = 64 << 10

// readLoop is the connection's one reading goroutine: it reads the
// broker's packets until the connection ends, then reports the loss.
func (c *Client) readLoop(k *conn) {
	defer c.wg.Done()
	err := c.readPackets(k)
	c.onLost(k, k.reason(err))
}

// readPackets handles each packet as it comes: a PUBLISH is delivered on
// this goroutine (to the subscription table and its queues, whose
// backpressure holds this goroutine, and so the broker) and then
// acknowledged, in the order received (§4.6); an acknowledgement completes
// what waits for it.
func (c *Client) readPackets(k *conn) error {
	for {
		k.buffered.Store(int64(k.r.Buffered())) // the last packet is handled
		b0, length, err := readHeader(k.r)
		if err != nil {
			return err
		}
		if b0>>4 == publishType {
			if err := c.readPublish(k, b0, length); err != nil {
				return err
			}
			continue
		}
		if length > maxControlPacket {
			return fmt.Errorf("mqtt: packet of type %d with %d bytes from the broker (at most %d)", b0>>4, length, maxControlPacket)
		}
		p, err := readControl(k.r, b0, length)
		if err != nil {
			return err
		}
		if err := c.handle(k, p); err != nil {
			return err
		}
	}
}

// readHeader reads a fixed header (§2.2): the first byte and the remaining
// length (1 to 4 bytes of 7 bits, least significant first).
func readHeader(r *bufio.Reader) (b0 byte, length int, err error) {
	if b0, err = r.ReadByte(); err != nil {
		return 0, 0, err
	}
	shift := 0
	for range 4 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, 0, noEOF(err)
		}
		length |= int(b&0x7f) << shift
		if b&0x80 == 0 {
			return b0, length, nil
		}
		shift += 7
	}
	return 0, 0, errors.New("mqtt: malformed packet from the broker: remaining length over 4 bytes")
}

// noEOF turns an end of stream inside a packet into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readPublish reads a PUBLISH body of length bytes, delivers it unless
// it is over MaxMessageBytes (then skipped) or a QoS 2 one delivered
// already, and acknowledges it (PUBACK for QoS 1, PUBREC for QoS 2).
func (c *Client) readPublish(k *conn, b0 byte, length int) error {
	qos := (b0 & qosBits) >> 1
	if qos == 3 {
		return errors.New("mqtt: malformed PUBLISH from the broker: QoS 3")
	}
	if max := c.opts.MaxMessageBytes; max > 0 && length > max {
		return c.skip(k, qos, length)
	}
	body, err := readBody(k.r, length)
	if err != nil {
		return err
	}
	p, err := decodePublish(packet{kind: publishType, flags: b0 & 0x0f}, body)
	if err != nil {
		return err
	}
	if qos < 2 || c.sess.received2(p.id) {
		c.route(Message{Topic: p.topic, Payload: p.payload, Retained: b0&retainBit != 0})
	}
	return c.ackPublish(k, qos, p.id)
}

// readBody reads a packet body of length bytes.
func readBody(r *bufio.Reader, length int) ([]byte, error) {
	if length <= preallocMax {
		body := make([]byte, length)
		_, err := io.ReadFull(r, body)
		return body, noEOF(err)
	}
	body, err := io.ReadAll(io.LimitReader(r, int64(length)))
	if err == nil && len(body) < length {
		err = io.ErrUnexpectedEOF
	}
	return body, err
}

func decodePublish(p packet, body []byte) (packet, error) {
	topic, rest, ok := cutString(body)
	if !ok {
		return packet{}, errors.New("mqtt: malformed PUBLISH: topic longer than the packet")
	}
	p.topic = topic
	switch p.pubQoS() {
	case 0:
	case 1, 2:
		if len(rest) < 2 {
			return packet{}, errors.New("mqtt: malformed PUBLISH: no packet identifier")
		}
		p.id, rest = be16(rest), rest[2:]
	default:
		return packet{}, errors.New("mqtt: malformed PUBLISH: QoS 3")
	}
	p.payload = rest
	return p, nil
}

func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

// cutString splits a length-prefixed string (§1.5.3) off b.
func cutString(b []byte) (string, []byte, bool) {
	if len(b) < 2 {
		return "", nil, false
	}
	n := int(be16(b))
	if 2+n > len(b) {
		return "", nil, false
	}
	return string(b[2 : 2+n]), b[2+n:], true
}

// ackPublish answers a PUBLISH received at qos.
func (c *Client) ackPublish(k *conn, qos byte, id uint16) error {
	switch qos {
	case 1:
		return k.writePacket(encodeAck(pubackType, id))
	case 2:
		return k.writePacket(encodeAck(pubrecType, id))
	}
	return nil
}

// encodeAck frames a PUBACK, PUBREC, PUBREL or PUBCOMP (§3.4-3.7).
func encodeAck(kind byte, id uint16) []byte {
	b0 := kind << 4
	if kind == pubrelType {
		b0 |= 0x02 // §3.6.1: PUBREL's reserved flags are 0010
	}
	return []byte{b0, 2, byte(id >> 8), byte(id)}
}

// readControl reads and decodes a packet other than PUBLISH. One that
// fits the read buffer (every packet but a huge SUBACK) is decoded where
// it lies, so a PUBACK costs no allocation.
func readControl(r *bufio.Reader, b0 byte, length int) (packet, error) {
	if length > r.Size() {
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return packet{}, noEOF(err)
		}
		return decodeControl(b0, body)
	}
	body, err := r.Peek(length)
	if err != nil {
		return packet{}, noEOF(err)
	}
	p, err := decodeControl(b0, body)
	_, _ = r.Discard(length)
	return p, err
}

// decodeControl parses the body of a packet other than PUBLISH and keeps
// no reference to it, so the reader may decode from a buffer on its stack.
func decodeControl(b0 byte, body []byte) (packet, error) {
	p := packet{kind: b0 >> 4, flags: b0 & 0x0f}
	bad := func(why string) (packet, error) {
		return packet{}, fmt.Errorf("mqtt: malformed packet of type %d: %s", p.kind, why)
	}
	switch p.kind {
	case connackType:
		if len(body) != 2 {
			return bad("length not 2")
		}
		p.sessionPresent, p.code = body[0]&1 == 1, body[1]
	case pubackType, pubrecType, pubrelType, pubcompType, unsubackType:
		if len(body) != 2 {
			return bad("length not 2")
		}
		p.id = be16(body)
	case subackType:
		if len(body) < 3 {
			return bad("no return code")
		}
		p.id, p.codes = be16(body), append([]byte(nil), body[2:]...)
	case pingreqType, pingrespType, disconnectType:
		if len(body) != 0 {
			return bad("a body")
		}
	case subscribeType, unsubscribeType:
		return decodeSubscribe(p, body)
	case connectType:
		return decodeConnect(p, body)
	default:
		return bad("unknown type")
	}
	return p, nil
}

// handle acts on a packet other than PUBLISH.
func (c *Client) handle(k *conn, p packet) error {
	switch p.kind {
	case pubackType:
		c.sess.acked(p.id)
	case pubrecType, pubrelType, pubcompType:
		return c.handleQoS2(k, p)
	case subackType:
		c.sess.answered(p.id, p.codes)
	case unsubackType:
		c.sess.answered(p.id, []byte{})
	case pingrespType:
	case disconnectType: // mochi's, as it closes a connection taken over
		return fmt.Errorf("mqtt: the broker closed the connection (DISCONNECT): %w", io.EOF)
	default:
		return fmt.Errorf("mqtt: unexpected packet of type %d from the broker", p.kind)
	}
	return nil
}

// maxBatch bounds the packets handed to a writing goroutine: past it, a
// writer waits for the socket itself.
const maxBatch = 256 << 10

// writer is the one way packets reach the socket. Every packet is written
// whole by the goroutine that made it (a publisher, the reader's PUBACK,
// the keep-alive's PINGREQ): no writing goroutine to hand over to, so a
// command costs no thread wake-up on its way out.
//
// Packets do not queue for the socket one by one: while a goroutine
// writes, the others hand it their packets (batch) and return, and it
// writes them all in one write before it lets go. Firings answering a
// burst of events then cost a write syscall per burst, not per command,
// and the broker a read.
type writer struct {
	wmu sync.Mutex // held by the goroutine writing

	bmu     sync.Mutex
	writing bool   // a goroutine holds wmu: it writes batch too
	batch   []byte // packets handed to that goroutine, whole, in order
	spare   []byte // the array of the batch last written (reused)
}

// writePacket writes one whole packet, or hands it to the goroutine
// writing now, which writes it before it returns: either way it reaches
// the socket after every packet this goroutine wrote before. A write that
// fails leaves the stream cut mid-packet, so it closes the connection
// (the reader then reports the loss and the client reconnects): the QoS 1
// publishes it carried hear errLostUnacked, the QoS 0 ones handed over
// are lost with the connection.
func (k *conn) writePacket(pkt []byte) error {
	w := &k.writer
	w.bmu.Lock()
	if w.writing && len(w.batch)+len(pkt) <= maxBatch {
		w.batch = append(w.batch, pkt...)
		w.bmu.Unlock()
		return nil
	}
	w.bmu.Unlock()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if k.isDead() {
		return ErrNotConnected
	}
	w.bmu.Lock()
	w.writing = true
	w.bmu.Unlock()
	_, err := k.nc.Write(pkt)
	for err == nil {
		w.bmu.Lock()
		b := w.batch
		if len(b) == 0 {
			w.writing = false
			w.bmu.Unlock()
			k.lastWrite.Store(time.Now().UnixNano())
			return nil
		}
		w.batch = w.spare[:0]
		w.bmu.Unlock()
		_, err = k.nc.Write(b)
		w.spare = b // only the goroutine holding wmu touches spare
	}
	w.bmu.Lock()
	w.writing, w.batch = false, nil
	w.bmu.Unlock()
	k.close(err)
	return err
}

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
