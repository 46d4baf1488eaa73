package mqtt

// Delivery of a received message to its handlers: the subscription table
// (routes), each subscription's offer (the handler run on the delivering
// goroutine, or queued for its own), shared by Client and Inline.

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// route hands m to every subscription whose filters match it (once each),
// waiting for room in a full queue (see offer). Exact filters are one map
// lookup; only wildcard filters are matched one by one.
// The table's lock is not held while waiting.
func (c *Client) route(m Message) {
	var buf [4]*subscription
	c.mu.Lock()
	subs := c.subs.matching(m.Topic, buf[:0])
	c.mu.Unlock()
	for _, s := range subs {
		s.offer(m)
	}
}

// routes is a subscription table shared by Client and the embedded broker's
// inline router: exact filters are one map lookup, and only wildcard filters
// are matched one by one, without allocating (mochi's topic index builds
// new maps for every message). A filter set's subscription is registered
// under each of its filters. Callers hold their own lock.
type routes struct {
	byFilter map[string][]*subscription
	wild     []string // the filters of byFilter with wildcards
}

// matching appends to out every subscription with a filter that matches
// topic, each once (a set may match a topic through several filters).
func (r *routes) matching(topic string, out []*subscription) []*subscription {
	add := func(subs []*subscription) {
		for _, s := range subs {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	add(r.byFilter[topic])
	for _, f := range r.wild {
		if TopicMatch(f, topic) {
			add(r.byFilter[f])
		}
	}
	return out
}

// subscription is one handler with its queue and delivery goroutine. A
// plain Subscribe has one filter; a filter set (SubscribeSet) registers the
// same subscription under each of its filters.
type subscription struct {
	filter string // the filter, or a description of a set (for logs)
	qos    byte
	h      Handler
	queue  chan Message
	stats  *deliveryStats // the owning client's
	stall  time.Duration  // how long an offer may wait for room
	quit   <-chan struct{}
	log    *slog.Logger
	// direct: the deliverer runs the handler itself when nothing is queued
	// for it (see offer). running is held while the handler runs; pending
	// counts the messages queued and not yet handled.
	direct  bool
	running sync.Mutex
	pending atomic.Int64
	busy    *busyMeter // how much of the time the handler runs
}

// offer hands m to the handler. A direct subscription's handler runs on
// the deliverer's goroutine when nothing is queued for it and it is not
// running: no hand-over to the delivery goroutine, and the deliverer (the
// connection) waits for it. Otherwise m is queued. A full queue is
// backpressure: the deliverer waits for room (the connection's reader,
// and so the broker holds further messages back; or the embedded
// broker's publisher), counted in the client's Delivery. Only a handler
// stuck for the whole stall limit loses m (counted, logged now and then),
// so that a handler that waits for the connection itself cannot stall it
// for good. Shared by Client and Inline.
func (s *subscription) offer(m Message) {
	if s.direct && s.pending.Load() == 0 && s.running.TryLock() {
		if s.pending.Load() == 0 { // nothing was queued meanwhile: m is next
			s.call(m)
			s.running.Unlock()
			return
		}
		s.running.Unlock()
	}
	s.pending.Add(1)
	select {
	case s.queue <- m:
		return
	default:
	}
	start := time.Now()
	t := time.NewTimer(s.stall)
	defer t.Stop()
	s.stats.waits.Add(1)
	defer func() { s.stats.waitedNs.Add(uint64(time.Since(start))) }()
	select {
	case s.queue <- m:
	case <-s.quit:
		s.pending.Add(-1)
	case <-t.C:
		s.pending.Add(-1)
		if n := s.stats.dropped.Add(1); n == 1 || n%1000 == 0 {
			s.log.Warn("handler stuck; message dropped", "filter", s.filter, "topic", m.Topic, "waited", s.stall, "dropped_total", n)
		}
	}
}

func (s *subscription) call(m Message) {
	s.busy.begin()
	defer s.busy.end()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("message handler panicked", "filter", s.filter, "topic", m.Topic, "panic", r)
		}
	}()
	s.h(m)
}

// run calls the handler for each queued message, in order, until quit is
// closed; a panicking handler is logged and the next message goes on.
func (s *subscription) run(quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		case m := <-s.queue:
			s.running.Lock()
			s.call(m)
			s.pending.Add(-1)
			s.running.Unlock()
		}
	}
}

// dispatch runs one subscription's handler, in order, until Close.
func (c *Client) dispatch(s *subscription) {
	defer c.wg.Done()
	s.run(c.quit)
}

// add registers s under filter and returns the filter's subscriptions.
func (r *routes) add(filter string, s *subscription) []*subscription {
	if r.byFilter == nil {
		r.byFilter = map[string][]*subscription{}
	}
	if len(r.byFilter[filter]) == 0 && isWild(filter) {
		r.wild = append(r.wild, filter)
	}
	r.byFilter[filter] = append(r.byFilter[filter], s)
	return r.byFilter[filter]
}

// remove unregisters s from filter and reports whether the filter has no
// subscription left; the table's slices are never changed in place, so a
// caller iterating a copy of them is unaffected.
func (r *routes) remove(filter string, s *subscription) (last bool) {
	subs := r.byFilter[filter]
	for i, x := range subs {
		if x == s {
			subs = append(subs[:i:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) > 0 {
		r.byFilter[filter] = subs
		return false
	}
	delete(r.byFilter, filter)
	for i, f := range r.wild {
		if f == filter {
			r.wild = append(r.wild[:i:i], r.wild[i+1:]...)
			break
		}
	}
	return true
}

func newSubscription(filter string, qos byte, h Handler, queueSize int, stall time.Duration, stats *deliveryStats, quit <-chan struct{}, log *slog.Logger) *subscription {
	return &subscription{filter: filter, qos: qos, h: h, queue: make(chan Message, queueSize), stats: stats, stall: stall, quit: quit, log: log,
		busy: stats.meters.add()}
}

// deliveryStats counts how deliveries to a client's handlers went.
type deliveryStats struct {
	waits, waitedNs, dropped, oversized atomic.Uint64
	meters                              meters
}

func (d *deliveryStats) snapshot() Delivery {
	return Delivery{Backpressured: d.waits.Load(), Waited: time.Duration(d.waitedNs.Load()), Dropped: d.dropped.Load(),
		Oversized: d.oversized.Load(), Busy: d.meters.busiest()}
}

// TopicMatch reports whether topic matches filter (MQTT 3.1.1 §4.7):
// "+" matches one level, a final "#" the rest (and the parent level), and
// wildcards at the first level never match topics starting with "$".
func TopicMatch(filter, topic string) bool {
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
