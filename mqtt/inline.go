package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Inline is the embedded broker's own client: the server's catalog and
// engine talk to the broker they run beside without a TCP connection, an
// MQTT client library and the broker's handling of that connection (about
// a third of the CPU an event costs with the embedded broker). Devices and
// other clients still connect over TCP. It has the Client's delivery
// semantics: each Subscribe gets its own queue and goroutine, handlers see
// their messages in order, and a handler that falls QueueSize messages
// behind loses messages (counted, logged) rather than stalling the broker.
type Inline struct {
	b       *Broker
	log     *slog.Logger
	mu      sync.Mutex
	nextID  int
	subs    []inlineSub
	closed  bool
	quit    chan struct{}
	wg      sync.WaitGroup
	dropped atomic.Uint64
}

type inlineSub struct {
	filter string
	id     int
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
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("mqtt: subscribe %q: client closed", filter)
	}
	c.nextID++
	id := c.nextID
	c.subs = append(c.subs, inlineSub{filter, id})
	c.wg.Add(1)
	c.mu.Unlock()
	s := &subscription{filter: filter, qos: qos, h: h, queue: make(chan Message, DefaultQueueSize)}
	go func() {
		defer c.wg.Done()
		s.run(c.quit, c.log)
	}()
	deliver := func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		s.offer(Message{Topic: pk.TopicName, Payload: append([]byte(nil), pk.Payload...), Retained: pk.FixedHeader.Retain}, &c.dropped, c.log)
	}
	// Retained messages are delivered inside Subscribe: exclusive with a
	// retained PUBLISH being stored (see retainGuard).
	c.b.guard.mu.RLock()
	err := c.b.srv.Subscribe(filter, id, deliver)
	c.b.guard.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("mqtt: subscribe %q: %w", filter, err)
	}
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

// Dropped reports how many messages were dropped for slow handlers.
func (c *Inline) Dropped() uint64 { return c.dropped.Load() }

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
	if !c.b.closed.Load() {
		for _, s := range subs {
			_ = c.b.srv.Unsubscribe(s.filter, s.id)
		}
	}
	close(c.quit)
	c.wg.Wait()
}
