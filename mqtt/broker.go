package mqtt

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// Broker is an embedded MQTT broker (mochi-mqtt) on one TCP listener, with
// retained messages, for the zero-setup default and for tests.
type Broker struct {
	srv       *mochi.Server
	ln        *trackingListener
	guard     *retainGuard
	router    *inlineRouter
	auth      AuthCounts
	limits    *limitsHook
	closeOnce sync.Once
	closed    atomic.Bool
}

const listenerID = "tcp"

// BrokerOption configures StartBroker.
type BrokerOption func(*brokerConfig)

type brokerConfig struct {
	users       []BrokerUser
	authLog     *slog.Logger
	maxPacket   int
	maxRetained int
}

// WithAuthLogger sets where refused connections and denied publishes and
// subscriptions are logged (default: the broker's logger).
func WithAuthLogger(l *slog.Logger) BrokerOption {
	return func(c *brokerConfig) { c.authLog = l }
}

// StartBroker listens on addr ("127.0.0.1:1883", or "127.0.0.1:0" for a free
// port) and serves MQTT there until Close. A nil logger discards the broker's
// logs.
//
// Without broker users (WithBrokerUsers) every client is allowed, so the
// listener must be loopback: any other address fails with
// ErrAnonymousListener, as Mosquitto 2 refuses anonymous clients beyond
// loopback. With users, every network client must authenticate, on
// loopback too; the Inline client needs no credentials. Either way a
// CONNECT whose last will could not be published as a PUBLISH (its user's
// write filters, $SYS, wildcards) is refused: mochi sends wills without
// asking the ACL.
func StartBroker(addr string, logger *slog.Logger, opts ...BrokerOption) (*Broker, error) {
	var cfg brokerConfig
	for _, o := range opts {
		o(&cfg)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	users, err := newAuthUsers(cfg.users)
	if err != nil {
		return nil, fmt.Errorf("mqtt: embedded broker: %w", err)
	}
	nl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mqtt: embedded broker: listen on %s: %w", addr, err)
	}
	if len(users) == 0 && !loopbackAddr(nl.Addr()) {
		_ = nl.Close()
		return nil, fmt.Errorf("%w: %s listens on %s without broker users", ErrAnonymousListener, addr, nl.Addr())
	}
	ln := &trackingListener{Listener: nl, conns: map[*trackedConn]struct{}{}}
	blog := logger.With("component", "mqtt-broker")
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = uint32(orDefault(cfg.maxPacket, DefaultMaxPacketBytes))
	srv := mochi.New(&mochi.Options{
		Logger:                 blog,
		Capabilities:           caps,
		SysTopicResendInterval: 60,
		InlineClient:           true, // Broker.Inline: the server's own client
	})
	alog := blog
	if cfg.authLog != nil {
		alog = cfg.authLog.With("component", "mqtt-broker")
	}
	b := &Broker{srv: srv, ln: ln, guard: new(retainGuard), router: new(inlineRouter),
		limits: &limitsHook{max: int64(orDefault(cfg.maxRetained, DefaultMaxRetainedBytes)), log: alog, sizes: map[string]int64{}}}
	hook := &authHook{anonymous: len(users) == 0, users: users, sessions: srv.Clients, log: alog, counts: &b.auth, fails: ratelimit.New(nil)}
	// limits before the guard: a retained PUBLISH it refuses to retain
	// takes no write lock.
	for _, h := range []mochi.Hook{hook, b.limits, b.guard, b.router, &takeoverHook{clients: srv.Clients}} {
		if err := srv.AddHook(h, nil); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("mqtt: embedded broker: %w", err)
		}
	}
	if err := srv.AddListener(listeners.NewNet(listenerID, ln)); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("mqtt: embedded broker: %w", err)
	}
	if err := srv.Serve(); err != nil {
		_ = srv.Close()
		_ = ln.Close()
		return nil, fmt.Errorf("mqtt: embedded broker: %w", err)
	}
	return b, nil
}

// AuthCounts returns the counters of refused connections and denied
// publishes and subscriptions (all zero without broker users).
func (b *Broker) AuthCounts() *AuthCounts { return &b.auth }

// Addr returns the host:port the broker listens on (the real port when
// started on port 0).
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// URL returns a URL a Client can dial, e.g. "tcp://127.0.0.1:41883". An
// unspecified listen address (0.0.0.0, ::) is given as 127.0.0.1.
func (b *Broker) URL() string {
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil {
		return "tcp://" + b.Addr()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "tcp://" + net.JoinHostPort(host, port)
}

// Port returns the TCP port the broker listens on.
func (b *Broker) Port() int {
	_, port, _ := net.SplitHostPort(b.Addr())
	n, _ := strconv.Atoi(port)
	return n
}

// Close disconnects all clients and stops listening. Retained messages are
// kept in memory only, so they are gone afterwards. Safe to call more than
// once.
func (b *Broker) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		// mochi's own listener shutdown (closeListenerClients) can deadlock
		// on its clients lock when a client attaches or leaves at the same
		// moment (a recursive RLock in Clients.GetByListener). So we take
		// the listener away from mochi, close it and every connection it
		// accepted ourselves, and only then let mochi stop.
		b.srv.Listeners.Delete(listenerID)
		b.ln.closeAll()
		err = b.srv.Close()
	})
	return err
}

// trackingListener remembers the connections it accepted so that Close can
// end them all, including one accepted a moment before.
type trackingListener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	l.conns[tc] = struct{}{}
	return tc, nil
}

func (l *trackingListener) closeAll() {
	_ = l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = map[*trackedConn]struct{}{}
	l.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	l *trackingListener
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// retainGuard works around a data race in mochi v2.7.9 (mochi-mqtt/server
// issue #200): storing a retained message writes a topic node's retainPath
// under that node's lock, while delivering retained messages to a new
// wildcard subscription reads it without the lock. The guard makes the
// processing of a retained PUBLISH (or the sending of a retained will)
// exclusive with the retained-message delivery of a SUBSCRIBE. Each client's packets are processed one at a
// time on that client's goroutine, so the lock taken in OnPublish or
// OnSubscribed is released in OnPacketProcessed of the same packet, which
// mochi calls after every processed packet. Nothing blocking happens under
// the lock except the packet's own acknowledgement write; deliveries to
// other clients are non-blocking queue sends.
type retainGuard struct {
	mochi.HookBase
	mu   sync.RWMutex
	held sync.Map // *mochi.Client -> guardHold
}

type guardHold int

const (
	holdRead guardHold = iota + 1
	holdWrite
)

func (g *retainGuard) ID() string { return "pilothouse-retain-guard" }

func (g *retainGuard) Provides(b byte) bool {
	return bytes.Contains([]byte{mochi.OnPublish, mochi.OnSubscribed, mochi.OnPacketProcessed, mochi.OnWill, mochi.OnWillSent}, []byte{b})
}

func (g *retainGuard) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Retain && !cl.Net.Inline {
		g.mu.Lock()
		g.held.Store(cl, holdWrite)
	}
	return pk, nil
}

func (g *retainGuard) OnSubscribed(cl *mochi.Client, _ packets.Packet, _ []byte) {
	if !cl.Net.Inline {
		g.mu.RLock()
		g.held.Store(cl, holdRead)
	}
}

// OnWill takes the lock for a retained will, which mochi stores the way it
// stores a retained PUBLISH, on the disconnecting client's goroutine
// between OnWill and OnWillSent. A will delay (MQTT 5) would have mochi
// store it later from its own loop, past every hook, so a retained will
// is sent at once instead.
func (g *retainGuard) OnWill(cl *mochi.Client, will mochi.Will) (mochi.Will, error) {
	if will.Retain && !cl.Net.Inline {
		cl.Properties.Will.WillDelayInterval = 0
		g.mu.Lock()
		g.held.Store(cl, holdWrite)
	}
	return will, nil
}

func (g *retainGuard) OnWillSent(cl *mochi.Client, _ packets.Packet) { g.release(cl) }

func (g *retainGuard) OnPacketProcessed(cl *mochi.Client, _ packets.Packet, _ error) { g.release(cl) }

func (g *retainGuard) release(cl *mochi.Client) {
	h, ok := g.held.LoadAndDelete(cl)
	if !ok {
		return
	}
	switch h.(guardHold) {
	case holdWrite:
		g.mu.Unlock()
	case holdRead:
		g.mu.RUnlock()
	}
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
