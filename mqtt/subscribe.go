package mqtt

// Subscribing: Subscribe, the SUBSCRIBE and UNSUBSCRIBE requests and their
// answers (SUBACK, UNSUBACK), and the resubscription on every connect.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// resubscribeAll subscribes every filter of the table on a new connection,
// in batches (a house of thousands of devices has thousands of exact
// filters).
func (c *Client) resubscribeAll() {
	c.wire.Lock()
	defer c.wire.Unlock()
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
	failed := c.subscribeMany(want)
	if c.Connected() {
		c.noteSubscribed(want, failed) // kept and retried; Health says so
	}
}

// errIDInUse is mochi's SUBACK code 0x91 (packet identifier in use): mochi
// shares one packet-id space between its QoS 1 deliveries to a client and
// that client's own SUBSCRIBEs, so a SUBSCRIBE can collide with a retained
// message still waiting for our PUBACK. Retrying shortly after succeeds.
var errIDInUse = errors.New("packet identifier in use")

// subscribeBatch bounds the filters of one SUBSCRIBE or UNSUBSCRIBE packet.
const subscribeBatch = 128

// subscribeMany sends SUBSCRIBEs for want (filter -> QoS), subscribeBatch
// filters a packet, waits for their SUBACKs, retries filters refused for a
// packet-id collision a few times, and returns the filters that failed.
func (c *Client) subscribeMany(want map[string]byte) map[string]error {
	failed := map[string]error{}
	wait := 10 * time.Millisecond
	for attempt := 0; len(want) > 0; attempt++ {
		retry := map[string]byte{}
		for _, batch := range batches(want) {
			for f, err := range c.subscribeBatch(batch) {
				if errors.Is(err, errIDInUse) && attempt < 8 {
					retry[f] = batch[f]
					continue
				}
				failed[f] = err
			}
		}
		if want = retry; len(want) == 0 {
			break
		}
		select {
		case <-c.quit:
			for f := range want {
				failed[f] = fmt.Errorf("mqtt: subscribe %q: %w", f, errIDInUse)
			}
			return failed
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
	return failed
}

// batches splits want into maps of at most subscribeBatch filters.
func batches(want map[string]byte) []map[string]byte {
	var out []map[string]byte
	for f, q := range want {
		if len(out) == 0 || len(out[len(out)-1]) == subscribeBatch {
			out = append(out, make(map[string]byte, min(len(want), subscribeBatch)))
		}
		out[len(out)-1][f] = q
	}
	return out
}

// unsubscribeMany sends UNSUBSCRIBEs for filters, subscribeBatch a packet,
// and waits for their acknowledgements.
func (c *Client) unsubscribeMany(filters []string) error {
	for i := 0; i < len(filters); i += subscribeBatch {
		batch := filters[i:min(i+subscribeBatch, len(filters))]
		if _, err := c.request(batch, nil); err != nil {
			return fmt.Errorf("mqtt: unsubscribe %d filters: %w", len(batch), err)
		}
	}
	return nil
}

// request sends a SUBSCRIBE of filters at their qos (an UNSUBSCRIBE when
// qos is nil) and waits for the broker's answer at most ConnectTimeout, or
// while the broker keeps sending (stillDelivering) up to maxAnswerWait:
// the SUBACK's return codes (none for an UNSUBACK).
func (c *Client) request(filters []string, qos []byte) ([]byte, error) {
	k, id, ch, err := c.sess.ask()
	if err != nil {
		return nil, err
	}
	pkt := encodeUnsubscribe(id, filters)
	if qos != nil {
		pkt = encodeSubscribe(id, filters, qos)
	}
	if err := k.writePacket(pkt); err != nil {
		c.sess.drop(id)
		return nil, err
	}
	start := time.Now()
	t := time.NewTimer(c.opts.ConnectTimeout)
	defer t.Stop()
	for {
		select {
		case codes, ok := <-ch:
			if !ok {
				return nil, ErrNotConnected
			}
			return codes, nil
		case <-t.C:
		}
		if c.stillDelivering() && time.Since(start) < maxAnswerWait {
			t.Reset(time.Second)
			continue
		}
		c.sess.drop(id)
		return nil, fmt.Errorf("%w within %s", errUnanswered, time.Since(start).Round(time.Second))
	}
}

// errUnanswered: the broker did not answer a SUBSCRIBE or UNSUBSCRIBE.
var errUnanswered = errors.New("no answer from the broker")

// maxAnswerWait bounds the wait for a SUBACK or UNSUBACK while the broker
// keeps sending (see stillDelivering).
const maxAnswerWait = time.Minute

// stillDelivering reports whether the broker sent something in the last
// second or a handler was busy most of the last seconds. The answer to a
// SUBSCRIBE comes on the one reader behind what the broker sent before it,
// each message handled first: a burst of retained messages (thousands of
// discovery configs) holds it back past ConnectTimeout on a broker that
// is well.
func (c *Client) stillDelivering() bool {
	return time.Since(time.Unix(0, c.lastRead.Load())) < time.Second || c.stats.meters.busiest() > 0.5
}

func maxQoS(subs []*subscription) byte {
	var q byte
	for _, s := range subs {
		q = max(q, s.qos)
	}
	return q
}

// subscribeBatch sends one SUBSCRIBE for batch, waits for its SUBACK and
// returns the filters that failed: each return code of 0x80 and above
// (§3.9.3) is a refusal.
func (c *Client) subscribeBatch(batch map[string]byte) map[string]error {
	filters := make([]string, 0, len(batch))
	for f := range batch {
		filters = append(filters, f)
	}
	slices.Sort(filters)
	qos := make([]byte, len(filters))
	for i, f := range filters {
		qos[i] = batch[f]
	}
	codes, err := c.request(filters, qos)
	if err == nil && len(codes) != len(filters) {
		err = fmt.Errorf("the SUBACK has %d return codes for %d filters", len(codes), len(filters))
	}
	out := map[string]error{}
	for i, f := range filters {
		switch {
		case err != nil:
			out[f] = fmt.Errorf("mqtt: subscribe %q: %w", f, err)
		case codes[i] == 0x91:
			out[f] = fmt.Errorf("mqtt: subscribe %q: %w", f, errIDInUse)
		case codes[i] >= 0x80:
			out[f] = fmt.Errorf("mqtt: subscribe %q: refused by the broker (code %#x)", f, codes[i])
		}
	}
	return out
}

// Subscribe registers h for filter (MQTT wildcards allowed) at the given QoS.
// The subscription is remembered and re-established after every reconnect;
// while disconnected it is only remembered and Subscribe returns nil. A
// filter the broker refuses fails Subscribe; one it does not answer in
// time is kept and subscribed again with backoff (Health reports it).
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
	s := c.newSub(filter, qos, h)
	c.wire.Lock()
	defer c.wire.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("mqtt: subscribe %q: client closed", filter)
	}
	q := maxQoS(c.subs.add(filter, s))
	ready := c.ready
	c.wg.Add(1)
	c.mu.Unlock()
	go c.dispatch(s)

	if !ready || !c.Connected() {
		return nil // the next onConnect subscribes
	}
	err := c.subscribeMany(map[string]byte{filter: q})[filter]
	if err != nil && !c.Connected() {
		return nil // lost the connection meanwhile; onConnect will subscribe
	}
	if errors.Is(err, errUnanswered) {
		// Kept and subscribed again (Health says so meanwhile): a broker
		// slow to answer has not refused.
		c.noteSubscribed(map[string]byte{filter: q}, map[string]error{filter: err})
		return nil
	}
	if err != nil {
		c.mu.Lock()
		c.subs.remove(filter, s) // its dispatcher runs until Close, without messages
		c.mu.Unlock()
	}
	return err
}

func (c *Client) newSub(filter string, qos byte, h Handler) *subscription {
	return newSubscription(filter, qos, h, c.opts.QueueSize, c.opts.StallLimit, &c.stats, c.quit, c.log)
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

// ask registers a SUBSCRIBE or UNSUBSCRIBE on the current connection: its
// answer (the SUBACK's return codes; none for an UNSUBACK) comes on the
// channel, which is closed if the connection is lost first.
func (s *session) ask() (*conn, uint16, chan []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil, 0, nil, ErrNotConnected
	}
	id, err := s.nextID()
	if err != nil {
		return nil, 0, nil, err
	}
	if s.answers == nil {
		s.answers = make(map[uint16]chan []byte)
	}
	ch := make(chan []byte, 1)
	s.answers[id] = ch
	return s.cur, id, ch, nil
}

// answered hands a SUBACK's codes (or an UNSUBACK) to whoever asked.
func (s *session) answered(id uint16, codes []byte) {
	s.mu.Lock()
	ch, ok := s.answers[id]
	delete(s.answers, id)
	s.mu.Unlock()
	if ok {
		ch <- codes
	}
}

// drop forgets a question nobody waits for any more.
func (s *session) drop(id uint16) {
	s.mu.Lock()
	delete(s.answers, id)
	s.mu.Unlock()
}
