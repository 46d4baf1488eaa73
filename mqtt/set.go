package mqtt

import (
	"errors"
	"fmt"
	"slices"
)

// clientSet is a Client's filter set: one subscription registered under
// each filter of the set.
type clientSet struct {
	c   *Client
	s   *subscription
	cur map[string]bool // guarded by c.mu
}

// SubscribeSet starts an empty filter set with handler h (see Filters).
func (c *Client) SubscribeSet(qos byte, h Handler) (Filters, error) {
	if qos > 2 || h == nil {
		return nil, fmt.Errorf("mqtt: subscribe set: invalid qos %d or nil handler", qos)
	}
	s := c.newSub("(filter set)", qos, h)
	s.direct = true
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("mqtt: subscribe set: client closed")
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go c.dispatch(s)
	return &clientSet{c: c, s: s, cur: map[string]bool{}}, nil
}

func (fs *clientSet) Set(filters []string) error {
	for _, f := range filters {
		if err := validFilter(f); err != nil {
			return err
		}
	}
	c := fs.c
	c.wire.Lock()
	defer c.wire.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("mqtt: subscribe set: client closed")
	}
	add, gone := fs.changeLocked(filters)
	ready := c.ready
	c.mu.Unlock()
	if !ready || !c.Connected() || len(add)+len(gone) == 0 {
		return nil // the next onConnect subscribes the table
	}
	// A filter the broker refuses (or leaves unanswered) stays in the set:
	// the client subscribes it again with backoff and Health reports it.
	failed := c.subscribeMany(add)
	if c.Connected() {
		c.noteSubscribed(add, failed)
	}
	if err := c.unsubscribeMany(gone); err != nil && c.Connected() {
		return err
	}
	return nil // or lost the connection meanwhile; onConnect subscribes
}

// changeLocked makes filters the set in the table and returns the filters
// to subscribe (with their QoS) and those nobody subscribes any more.
func (fs *clientSet) changeLocked(filters []string) (add map[string]byte, gone []string) {
	c := fs.c
	want := make(map[string]bool, len(filters))
	add = map[string]byte{}
	for _, f := range filters {
		want[f] = true
		if !fs.cur[f] {
			add[f] = maxQoS(c.subs.add(f, fs.s))
		}
	}
	for f := range fs.cur {
		if !want[f] && c.subs.remove(f, fs.s) {
			gone = append(gone, f)
		}
	}
	slices.Sort(gone)
	fs.cur = want
	return add, gone
}
