package mqtt

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultConnectTimeout = 5 * time.Second
	// DefaultMaxReconnectInterval keeps the first attempt after a broker
	// comes back within a second of it.
	DefaultMaxReconnectInterval = time.Second
	DefaultPublishTimeout       = 10 * time.Second
	DefaultQueueSize            = 1024
	DefaultStallLimit           = 2 * time.Second

	// A read that waits pingAfter for the broker pings it, and one that
	// waits silenceLimit drops the connection (see watchedConn): a frozen
	// broker is noticed within silenceLimit. keepAlive is the MQTT
	// keep-alive the CONNECT announces: the broker drops us after 1.5
	// times it without a packet, so the client pings after half of it
	// without a write (conn.keepAlive).
	pingAfter    = 3 * time.Second
	silenceLimit = 8 * time.Second
	keepAlive    = 10 * time.Second

	// disconnectQuiesce bounds how long Close waits for the DISCONNECT packet.
	disconnectQuiesce = 250 * time.Millisecond
	// handlerStopWait bounds how long Close waits for running handlers.
	handlerStopWait = time.Second
)

// Options configure a Client. Only Broker is required.
type Options struct {
	// Broker is the broker URL: tcp://host:port, ssl://host:port (also
	// tls://, mqtt://, mqtts://), ws://host:port/path or wss://. A bare
	// host:port means tcp://.
	Broker string
	// ClientID names the client's session. With one, the session is
	// persistent (clean session off): the broker keeps the subscriptions
	// and queues QoS 1 messages while the client is away, and delivers
	// them when it is back. Without one, a random id with a clean session
	// (nobody could resume it).
	ClientID string
	// FreshStart makes the client's first connection drop what the broker
	// kept for ClientID before this client existed: MQTT 3.1.1 messages
	// carry no time, so events queued while the process was not running
	// may be days old, and a rule must not act on them as if they were
	// new. Outages after that first connection keep the session.
	FreshStart bool
	Username   string
	Password   string
	TLS        *tls.Config
	// Will, when set, is published by the broker for the client when its
	// connection ends without a DISCONNECT.
	Will *Will
	// ConnectTimeout bounds one connection attempt and, for Dial, the whole
	// wait for the first connection. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ConnectRetry lets Dial return after one failed attempt and keep
	// trying in the background (see Dial), so a server can start while its
	// broker is still down.
	ConnectRetry bool
	// MaxReconnectInterval caps the backoff between connection attempts
	// (not the longer one after a session takeover, see Link). Default
	// DefaultMaxReconnectInterval.
	MaxReconnectInterval time.Duration
	// PublishTimeout bounds Publish when its context has no deadline.
	// Default DefaultPublishTimeout.
	PublishTimeout time.Duration
	// QueueSize is the per-subscription delivery queue length. When a
	// handler falls this far behind, the connection waits for it
	// (backpressure: the broker holds further messages back), counted in
	// Delivery. Default DefaultQueueSize.
	QueueSize int
	// StallLimit bounds that wait for one message: a handler stuck this
	// long loses the message (counted in Delivery, logged) so that the
	// connection goes on. Default DefaultStallLimit.
	StallLimit time.Duration
	// MaxMessageBytes, when positive, bounds a QoS 0 or 1 message: a bigger
	// one is skipped unread (Delivery.Oversized, logged; a QoS 1 one is
	// acknowledged).
	MaxMessageBytes int
	Logger          *slog.Logger
}

// Client is an MQTT 3.1.1 connection that reconnects with backoff (see
// reconnect), re-establishes every remembered subscription after each
// (re)connect, and refuses to publish while disconnected. With
// Options.ClientID its session is persistent: QoS 1 publishes the broker
// did not acknowledge are sent again when it still has the session.
// One reading goroutine per connection handles every packet from the
// broker, and every packet to it is written whole by the goroutine that
// made it (conn.go); the session (publish.go) holds what waits for an
// answer across connections.
//
// Delivery (deliver.go): each Subscribe (and each SubscribeSet) gets its
// own queue and goroutine, so a handler sees the messages of its
// subscription in the order the broker sent them. Handlers may call
// Publish. A handler that falls QueueSize messages behind holds the
// connection back until it catches up (TCP backpressure to the broker
// rather than lost messages), at most StallLimit per message; so a handler
// must not wait for the connection (a QoS 1 acknowledgement, a SUBACK)
// while its queue is full.
type Client struct {
	opts Options
	log  *slog.Logger
	sess session

	mu        sync.Mutex
	subs      routes
	up        bool          // last state seen by refreshStatus
	edges     []bool        // state changes not yet told to the listeners, in order
	down      chan struct{} // closed when the current connection is lost
	listeners []func(up bool)
	closed    bool
	// ready is set once onConnect has taken its snapshot of c.subs for a
	// connection; from then on Subscribe sends SUBSCRIBE itself.
	ready      bool
	firstReady chan struct{} // closed after the first onConnect

	kick      chan struct{} // wakes the status notifier
	quit      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // connect loop, notifier, dispatchers
	stats     deliveryStats
	// wire serialises the SUBSCRIBE and UNSUBSCRIBE exchanges of Subscribe,
	// filter sets and resubscribeAll with the table changes they send.
	wire sync.Mutex

	lastRead atomic.Int64 // Unix ns: when bytes last came from the broker
	health   healthState  // guarded by mu
	link     linkState    // guarded by mu
	refused  refusedSubs  // guarded by mu
	fresh    atomic.Bool  // Options.FreshStart not yet done
}

// Dial connects to o.Broker and returns once the first connection is up, or
// fails after o.ConnectTimeout (or when ctx ends) with the last connection
// error. After the first connection the client reconnects by itself until
// Close.
//
// With o.ConnectRetry, Dial makes one attempt; if the broker cannot be
// reached it returns the client anyway and keeps trying in the background
// like DialLazy. A broker that refuses the connection (bad credentials) is
// an error in both modes.
func Dial(ctx context.Context, o Options) (*Client, error) {
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	if o.ConnectRetry {
		err = c.connectOnce(ctx)
	} else {
		err = c.connectFirst(ctx)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// connectOnce is Dial with ConnectRetry: one attempt, then background retries.
func (c *Client) connectOnce(ctx context.Context) error {
	err := c.attempt(ctx.Done())
	if err == nil {
		c.awaitFirstReady(ctx)
		return nil
	}
	var refused *refusedError
	if errors.As(err, &refused) || ctx.Err() != nil {
		return fmt.Errorf("mqtt: connect to %s: %w", redact(c.opts.Broker), err)
	}
	c.log.Warn("broker not reachable yet; retrying in the background", "err", err)
	c.startReconnect(min(firstRetry, c.opts.MaxReconnectInterval))
	return nil
}

// awaitFirstReady lets the first onConnect finish, so that a Subscribe made
// right after Dial is sent and acknowledged synchronously.
func (c *Client) awaitFirstReady(ctx context.Context) {
	t := time.NewTimer(c.opts.ConnectTimeout)
	defer t.Stop()
	select {
	case <-c.firstReady:
	case <-ctx.Done():
	case <-t.C:
	}
	c.refreshStatus()
}

// DialLazy returns a client at once and connects in the background, retrying
// with backoff (capped at o.MaxReconnectInterval) until it succeeds or Close
// is called. Subscriptions made before the connection is up are established
// as soon as it is. It fails only on invalid options.
func DialLazy(o Options) (*Client, error) {
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	c.startReconnect(0)
	return c, nil
}

func newClient(o Options) (*Client, error) {
	broker, err := normalizeBroker(o.Broker)
	if err != nil {
		return nil, err
	}
	o.Broker = broker
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxReconnectInterval <= 0 {
		o.MaxReconnectInterval = DefaultMaxReconnectInterval
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = DefaultPublishTimeout
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.StallLimit <= 0 {
		o.StallLimit = DefaultStallLimit
	}
	persistent := o.ClientID != ""
	if !persistent {
		o.ClientID = randomClientID()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Client{
		opts: o,
		log:  o.Logger.With("component", "mqtt", "broker", redact(o.Broker)),
		down: closedChan(),
		kick: make(chan struct{}, 1),
		quit: make(chan struct{}),

		firstReady: make(chan struct{}),
	}
	c.link.persistent = persistent
	c.sess.persistent = persistent
	c.fresh.Store(persistent && o.FreshStart)
	c.wg.Add(1)
	go c.notifier()
	return c, nil
}

// normalizeBroker checks the broker URL and adds tcp:// to a bare host:port.
func normalizeBroker(b string) (string, error) {
	b = strings.TrimSpace(b)
	if b == "" {
		return "", errors.New("mqtt: no broker URL")
	}
	if !strings.Contains(b, "://") {
		b = "tcp://" + b
	}
	u, err := url.Parse(b)
	if err != nil {
		return "", fmt.Errorf("mqtt: broker URL %q: %w", redact(b), err)
	}
	switch u.Scheme {
	case "tcp", "mqtt", "ssl", "tls", "mqtts", "tcps", "ws", "wss":
	default:
		return "", fmt.Errorf("mqtt: broker URL %q: unsupported scheme %q (want tcp, ssl, ws or wss)", redact(b), u.Scheme)
	}
	if u.Host == "" {
		return "", fmt.Errorf("mqtt: broker URL %q: no host", redact(b))
	}
	return b, nil
}

// redact hides a password embedded in a broker URL before it is logged.
func redact(b string) string {
	u, err := url.Parse(b)
	if err != nil || u.User == nil {
		return b
	}
	return u.Redacted()
}

func randomClientID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "pilothouse-" + hex.EncodeToString(b[:])
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Connected reports whether the connection to the broker is open now.
func (c *Client) Connected() bool {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	return !closed && c.sess.connection() != nil
}

// Unread reports how many bytes from the broker wait in the current
// connection, received but not handled yet: in the kernel's socket buffer
// (Linux) and in the read buffer. Past capacity this is where events
// queue, before the broker's own queue.
func (c *Client) Unread() int {
	if k := c.sess.connection(); k != nil {
		return k.unread()
	}
	return 0
}

// Dropped returns how many messages were dropped because a handler was
// stuck for the whole StallLimit.
func (c *Client) Dropped() uint64 { return c.stats.dropped.Load() }

// Delivery reports how deliveries to the handlers went so far.
func (c *Client) Delivery() Delivery {
	d := c.stats.snapshot()
	d.Unread = c.Unread()
	return d
}

// OnConnectionChange registers f to be called with true when the connection
// comes up and false when it goes down (including Close). Calls are made in
// order from one goroutine, one call per change. f is not called with the
// state at registration time (read Connected for that), but a change made
// just before it may still reach f.
func (c *Client) OnConnectionChange(f func(up bool)) {
	if f == nil {
		return
	}
	c.mu.Lock()
	c.listeners = append(c.listeners, f)
	c.mu.Unlock()
}

// refreshStatus re-reads the connection state and records edges.
func (c *Client) refreshStatus() {
	open := c.sess.connection() != nil
	c.mu.Lock()
	up := !c.closed && open
	if up != c.up {
		c.up = up
		c.edges = append(c.edges, up)
		if up {
			c.down = make(chan struct{})
		} else {
			close(c.down)
		}
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// notifier calls the OnConnectionChange listeners with every state change,
// in order: a connection lost a moment after it came up is still told as
// lost to a listener that saw it up. On Close it delivers what is left
// before returning.
func (c *Client) notifier() {
	defer c.wg.Done()
	deliver := func() {
		c.mu.Lock()
		edges, ls := c.edges, append([]func(bool){}, c.listeners...)
		c.edges = nil
		c.mu.Unlock()
		for _, up := range edges {
			for _, f := range ls {
				c.callListener(f, up)
			}
		}
	}
	for {
		select {
		case <-c.kick:
			deliver()
		case <-c.quit:
			deliver()
			return
		}
	}
}

func (c *Client) callListener(f func(bool), up bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("connection listener panicked", "panic", r)
		}
	}()
	f(up)
}

// Close disconnects (waiting at most 250 ms for the DISCONNECT to be sent),
// stops background work and waits for it, at most about a second for
// handlers still running. It is safe to call more than once.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		if k := c.sess.connection(); k != nil {
			t := time.AfterFunc(disconnectQuiesce, func() { k.close(errClosed) })
			_ = k.writePacket(disconnect)
			t.Stop()
			k.close(errClosed)
		}
		c.refreshStatus()
		close(c.quit)
		done := make(chan struct{})
		go func() { c.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(handlerStopWait):
			c.log.Warn("a message handler is still running after Close")
		}
	})
}

var _ PubSub = (*Client)(nil)
