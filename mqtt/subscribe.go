package mqtt

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

type subscription struct {
	filter  string
	qos     byte
	h       Handler
	queue   chan Message
	dropped *atomic.Uint64 // the owning client's drop count
	log     *slog.Logger
}

func newSubscription(filter string, qos byte, h Handler, queueSize int, dropped *atomic.Uint64, log *slog.Logger) *subscription {
	return &subscription{filter: filter, qos: qos, h: h, queue: make(chan Message, queueSize), dropped: dropped, log: log}
}

func (c *Client) resubscribeAll() {
	c.mu.Lock()
	want := make(map[string]byte, len(c.subs.byFilter))
	for f, subs := range c.subs.byFilter {
		want[f] = maxQoS(subs)
	}
	first := !c.ready
	c.ready = true
	c.mu.Unlock()
	if first {
		defer close(c.firstReady)
	}
	for f, q := range want {
		if err := c.subscribe(f, q); err != nil {
			c.log.Error("resubscribe failed", "filter", f, "err", err)
		}
	}
}

// errIDInUse is mochi's SUBACK code 0x91 (packet identifier in use): mochi
// shares one packet-id space between its QoS 1 deliveries to a client and
// that client's own SUBSCRIBEs, so a SUBSCRIBE can collide with a retained
// message still waiting for our PUBACK. Retrying shortly after succeeds.
var errIDInUse = errors.New("packet identifier in use")

// subscribe sends one SUBSCRIBE and waits for its SUBACK, retrying a few
// times on a packet-id collision.
func (c *Client) subscribe(filter string, qos byte) error {
	wait := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := c.waitSubscribe(filter, c.pc.Subscribe(filter, qos, nil)) // delivered by c.deliver
		if !errors.Is(err, errIDInUse) || attempt == 8 {
			return err
		}
		select {
		case <-c.quit:
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

func maxQoS(subs []*subscription) byte {
	var q byte
	for _, s := range subs {
		q = max(q, s.qos)
	}
	return q
}

func (c *Client) waitSubscribe(filter string, tok paho.Token) error {
	if !tok.WaitTimeout(c.opts.ConnectTimeout) {
		return fmt.Errorf("mqtt: subscribe %q: no SUBACK within %s", filter, c.opts.ConnectTimeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("mqtt: subscribe %q: %w", filter, err)
	}
	if st, ok := tok.(*paho.SubscribeToken); ok {
		if code, found := st.Result()[filter]; found && code >= 0x80 {
			if code == 0x91 {
				return fmt.Errorf("mqtt: subscribe %q: %w", filter, errIDInUse)
			}
			return fmt.Errorf("mqtt: subscribe %q: refused by the broker (code %#x)", filter, code)
		}
	}
	return nil
}

// deliver is paho's handler for every message: it copies the message and
// enqueues it for every handler of every filter it matches, without
// blocking. Exact filters are one map lookup; only wildcard filters are
// matched one by one (paho's own router splits the topic and every filter
// into new slices for every message).
func (c *Client) deliver(_ paho.Client, pm paho.Message) {
	m := Message{Topic: pm.Topic(), Payload: pm.Payload(), Retained: pm.Retained()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs.match(m.Topic, func(s *subscription) { s.offer(m) })
}

// offer queues m for the handler without blocking: a handler QueueSize
// messages behind loses m (counted in its client's drop count, logged now
// and then). Shared by Client and Inline.
func (s *subscription) offer(m Message) {
	select {
	case s.queue <- m:
	default:
		if n := s.dropped.Add(1); n == 1 || n%1000 == 0 {
			s.log.Warn("handler too slow; message dropped", "filter", s.filter, "topic", m.Topic, "dropped_total", n)
		}
	}
}

// run calls the handler for each queued message, in order, until quit is
// closed; a panicking handler is logged and the next message goes on.
func (s *subscription) run(quit <-chan struct{}, log *slog.Logger) {
	for {
		select {
		case <-quit:
			return
		case m := <-s.queue:
			s.call(m, log)
		}
	}
}

func (s *subscription) call(m Message, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("message handler panicked", "filter", s.filter, "topic", m.Topic, "panic", r)
		}
	}()
	s.h(m)
}

// topicMatch reports whether topic matches filter (MQTT 3.1.1 §4.7):
// "+" matches one level, a final "#" the rest (and the parent level), and
// wildcards at the first level never match topics starting with "$".
func topicMatch(filter, topic string) bool {
	if topic != "" && topic[0] == '$' && filter != "" && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	for {
		fl, frest, fmore := strings.Cut(filter, "/")
		if fl == "#" {
			return true
		}
		tl, trest, tmore := strings.Cut(topic, "/")
		if fl != "+" && fl != tl {
			return false
		}
		switch {
		case !fmore && !tmore:
			return true
		case !tmore:
			return frest == "#"
		case !fmore:
			return false
		}
		filter, topic = frest, trest
	}
}

func isWild(filter string) bool { return strings.ContainsAny(filter, "+#") }

// Subscribe registers h for filter (MQTT wildcards allowed) at the given QoS.
// The subscription is remembered and re-established after every reconnect;
// while disconnected it is only remembered and Subscribe returns nil.
// Retained messages arrive with Retained set. Subscribing again to a filter
// that already has handlers makes the broker resend its retained messages,
// which the existing handlers see again.
func (c *Client) Subscribe(filter string, qos byte, h Handler) error {
	if err := validFilter(filter); err != nil {
		return err
	}
	if qos > 2 || h == nil {
		return fmt.Errorf("mqtt: subscribe %q: invalid qos %d or nil handler", filter, qos)
	}
	s := newSubscription(filter, qos, h, c.opts.QueueSize, &c.dropped, c.log)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("mqtt: subscribe %q: client closed", filter)
	}
	q := maxQoS(c.subs.add(s))
	ready := c.ready
	c.wg.Add(1)
	c.mu.Unlock()
	go c.dispatch(s)

	if !ready || !c.pc.IsConnectionOpen() {
		return nil // the next onConnect subscribes
	}
	err := c.subscribe(filter, q)
	if err != nil && !c.pc.IsConnectionOpen() {
		return nil // lost the connection meanwhile; onConnect will subscribe
	}
	if err != nil {
		c.removeSub(s)
	}
	return err
}

func (c *Client) removeSub(s *subscription) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs.remove(s)
	// The dispatcher keeps running until Close; it just gets no messages.
}

func validFilter(f string) error {
	if f == "" || strings.ContainsRune(f, 0) {
		return fmt.Errorf("mqtt: invalid topic filter %q", f)
	}
	levels := strings.Split(f, "/")
	for i, l := range levels {
		switch {
		case l == "#" && i != len(levels)-1,
			l != "#" && l != "+" && strings.ContainsAny(l, "#+"):
			return fmt.Errorf("mqtt: invalid topic filter %q", f)
		}
	}
	return nil
}

// dispatch runs one subscription's handler, in order, until Close.
func (c *Client) dispatch(s *subscription) {
	defer c.wg.Done()
	s.run(c.quit, c.log)
}
