package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Inline is the embedded broker's own client: the server's catalog and
// engine talk to the broker they run beside without a TCP connection, an
// MQTT client library and the broker's handling of that connection (about
// a third of the CPU an event costs with the embedded broker). Devices and
// other clients still connect over TCP. It has the Client's delivery
// semantics: each Subscribe gets its own queue and goroutine, handlers see
// their messages in order (retained ones first, with Retained set; live
// ones without it, as a broker sends them to an established subscription),
// and a handler that falls QueueSize messages behind loses messages
// (counted, logged) rather than stalling the broker.
//
// Messages reach Inline subscriptions through the broker's inlineRouter,
// not mochi's inline subscriptions: mochi's topic lookup copies the map of
// inline subscriptions of every matching topic level on every publish
// (about 1.6 KB per message, twice per firing).
type Inline struct {
	b      *Broker
	log    *slog.Logger
	mu     sync.Mutex
	subs   []*subscription
	closed bool
	quit   chan struct{}
	wg     sync.WaitGroup
	stats  deliveryStats
}

// Inline returns a new in-process client of b.
func (b *Broker) Inline(log *slog.Logger) *Inline {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Inline{b: b, log: log.With("component", "mqtt", "broker", "inline"), quit: make(chan struct{})}
}

// Subscribe registers h for filter. Retained messages are delivered first.
func (c *Inline) Subscribe(filter string, qos byte, h Handler) error {
	if err := validFilter(filter); err != nil {
		return err
	}
	if qos > 2 || h == nil {
		return fmt.Errorf("mqtt: subscribe %q: invalid qos %d or nil handler", filter, qos)
	}
	s, err := c.start(filter, qos, h)
	if err != nil {
		return err
	}
	c.b.router.change(c.b, s, []string{filter}, nil)
	return nil
}

// start makes a subscription and starts its delivery goroutine.
func (c *Inline) start(filter string, qos byte, h Handler) (*subscription, error) {
	s := newSubscription(filter, qos, h, DefaultQueueSize, DefaultStallLimit, &c.stats, c.quit, c.log)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.b.closed.Load() {
		return nil, fmt.Errorf("mqtt: subscribe %q: client closed", filter)
	}
	c.subs = append(c.subs, s)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		s.run(c.quit)
	}()
	return s, nil
}

// inlineSet is an Inline filter set.
type inlineSet struct {
	c   *Inline
	s   *subscription
	mu  sync.Mutex
	cur map[string]bool
}

// SubscribeSet starts an empty filter set with handler h (see Filters).
func (c *Inline) SubscribeSet(qos byte, h Handler) (Filters, error) {
	if qos > 2 || h == nil {
		return nil, fmt.Errorf("mqtt: subscribe set: invalid qos %d or nil handler", qos)
	}
	s, err := c.start("(filter set)", qos, h)
	if err != nil {
		return nil, err
	}
	s.direct = true
	return &inlineSet{c: c, s: s, cur: map[string]bool{}}, nil
}

func (fs *inlineSet) Set(filters []string) error {
	for _, f := range filters {
		if err := validFilter(f); err != nil {
			return err
		}
	}
	if !fs.c.Connected() {
		return errors.New("mqtt: subscribe set: client closed")
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	want := make(map[string]bool, len(filters))
	var add, gone []string
	for _, f := range filters {
		if !want[f] && !fs.cur[f] {
			add = append(add, f)
		}
		want[f] = true
	}
	for f := range fs.cur {
		if !want[f] {
			gone = append(gone, f)
		}
	}
	fs.cur = want
	fs.c.b.router.change(fs.c.b, fs.s, add, gone)
	return nil
}

// Publish hands the message to the broker, which delivers it before
// returning. It returns ErrNotConnected once the client or the broker is
// closed.
func (c *Inline) Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	if topic == "" || strings.ContainsAny(topic, "+#\x00") {
		return fmt.Errorf("mqtt: publish: invalid topic %q", topic)
	}
	if qos > 2 {
		return fmt.Errorf("mqtt: publish %q: invalid qos %d", topic, qos)
	}
	if !c.Connected() {
		return ErrNotConnected
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mqtt: publish %q: %w", topic, err)
	}
	payload = append([]byte(nil), payload...) // the broker keeps retained payloads
	if retain {
		c.b.guard.mu.Lock()
		defer c.b.guard.mu.Unlock()
	}
	if err := c.b.srv.Publish(topic, payload, retain, qos); err != nil {
		if errors.Is(err, mochi.ErrInlineClientNotEnabled) {
			return ErrNotConnected
		}
		return fmt.Errorf("mqtt: publish %q: %w", topic, err)
	}
	return nil
}

// Connected reports whether the client and its broker are open.
func (c *Inline) Connected() bool {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	return !closed && !c.b.closed.Load()
}

// Health reports whether the client and its broker are open (an
// in-process broker cannot freeze apart from the server).
func (c *Inline) Health() (ok bool, reason string) {
	if !c.Connected() {
		return false, "mqtt disconnected: the embedded broker is closed"
	}
	return true, ""
}

// Dropped reports how many messages were dropped for stuck handlers.
func (c *Inline) Dropped() uint64 { return c.stats.dropped.Load() }

// Delivery reports how deliveries to the handlers went so far.
func (c *Inline) Delivery() Delivery { return c.stats.snapshot() }

// Close removes the subscriptions and stops the handlers' goroutines.
func (c *Inline) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	subs := c.subs
	c.mu.Unlock()
	c.b.router.unsubscribe(subs)
	close(c.quit)
	c.wg.Wait()
}

// inlineRouter delivers the broker's messages to Inline subscriptions: a
// mochi hook called after every publish (and sent will) with our own topic
// table. Its lock orders a subscription against deliveries: a message is
// either among the retained ones a new subscription reads or delivered to
// it live, never both (retained publishes additionally hold retainGuard,
// which Subscribe takes first, against mochi #200).
type inlineRouter struct {
	mochi.HookBase
	mu     sync.RWMutex
	routes routes
}

func (r *inlineRouter) ID() string { return "pilothouse-inline-router" }

func (r *inlineRouter) Provides(b byte) bool {
	return b == mochi.OnPublished || b == mochi.OnWillSent
}

func (r *inlineRouter) OnPublished(_ *mochi.Client, pk packets.Packet) { r.deliver(pk) }

func (r *inlineRouter) OnWillSent(_ *mochi.Client, pk packets.Packet) { r.deliver(pk) }

func (r *inlineRouter) deliver(pk packets.Packet) {
	if pk.Ignore {
		return
	}
	var buf [4]*subscription
	r.mu.RLock()
	subs := r.routes.matching(pk.TopicName, buf[:0])
	r.mu.RUnlock()
	if len(subs) == 0 {
		return
	}
	// One copy shared by the handlers, as Client does; offered outside the
	// lock, since an offer may wait for a handler (backpressure).
	m := Message{Topic: pk.TopicName, Payload: append([]byte(nil), pk.Payload...)}
	for _, s := range subs {
		s.offer(m)
	}
}

// change registers s under the filters of add, queueing each one's
// retained messages first, and unregisters it from gone, as one step for
// deliveries.
func (r *inlineRouter) change(b *Broker, s *subscription, add, gone []string) {
	b.guard.mu.RLock()
	defer b.guard.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range gone {
		r.routes.remove(f, s)
	}
	for _, f := range add {
		for _, pk := range b.srv.Topics.Messages(f) {
			s.offer(Message{Topic: pk.TopicName, Payload: append([]byte(nil), pk.Payload...), Retained: true})
		}
		r.routes.add(f, s)
	}
}

// unsubscribe removes subs from every filter.
func (r *inlineRouter) unsubscribe(subs []*subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for f, list := range r.routes.byFilter {
		for _, s := range list {
			if slices.Contains(subs, s) {
				r.routes.remove(f, s)
			}
		}
	}
}
