package mqtt

import (
	"fmt"
	"slices"
	"time"
)

// subRetryMax caps the backoff between attempts to subscribe the filters the
// broker refused or left unanswered.
const subRetryMax = 30 * time.Second

// refusedSubs are the filters of the table the broker refused (a SUBACK
// code of 0x80 and above, an ACL) or did not acknowledge in time, on the
// current connection. They stay in the table and are subscribed again
// with backoff until the broker accepts them, so a server whose broker
// refuses its discovery filters runs degraded (Health says why) instead
// of not at all. Guarded by Client.mu.
type refusedSubs struct {
	why      map[string]string // filter -> the broker's answer
	retrying bool              // a retrySubs goroutine runs
	next     time.Time         // its next attempt
}

// noteSubscribed records how subscribing tried went on the connection:
// the filters that failed (and are still in the table) are kept for
// retrySubs, the others are no longer refused. A new reason is logged at
// WARN; the end of the refusals at INFO.
func (c *Client) noteSubscribed(tried map[string]byte, failed map[string]error) {
	c.mu.Lock()
	r := &c.refused
	before := len(r.why)
	oldFirst, _ := r.firstLocked()
	for f := range tried {
		delete(r.why, f)
	}
	for f, err := range failed {
		if len(c.subs.byFilter[f]) == 0 {
			continue
		}
		if r.why == nil {
			r.why = map[string]string{}
		}
		r.why[f] = err.Error()
	}
	first, why := r.firstLocked()
	n := len(r.why)
	start := n > 0 && !r.retrying && !c.closed
	if start {
		r.retrying = true
		c.wg.Add(1)
	}
	c.mu.Unlock()
	switch {
	case n > 0 && (before == 0 || first != oldFirst):
		c.log.Warn("the broker refused or did not acknowledge subscriptions; retrying with backoff (messages on them are not received meanwhile)", "filters", n, "first", first, "err", why)
	case n == 0 && before > 0:
		c.log.Info("the broker accepted the subscriptions it had refused", "filters", before)
	}
	if start {
		go c.retrySubs()
	}
}

// firstLocked returns the refused filter that sorts first and its reason.
func (r *refusedSubs) firstLocked() (string, string) {
	if len(r.why) == 0 {
		return "", ""
	}
	fs := make([]string, 0, len(r.why))
	for f := range r.why {
		fs = append(fs, f)
	}
	f := slices.Min(fs)
	return f, r.why[f]
}

// retrySubs subscribes the refused filters again, firstRetry after the
// refusal and doubling up to subRetryMax, until none is left or Close. A
// reconnect subscribes the whole table (resubscribeAll) in between.
func (c *Client) retrySubs() {
	defer c.wg.Done()
	wait := firstRetry
	for {
		c.mu.Lock()
		c.refused.next = time.Now().Add(wait)
		c.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-c.quit:
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, subRetryMax)
		if c.Connected() && !c.resubscribeRefused() {
			return
		}
	}
}

// resubscribeRefused makes one attempt at the refused filters and reports
// whether some are still refused (else the retrier ends).
func (c *Client) resubscribeRefused() bool {
	c.wire.Lock()
	defer c.wire.Unlock()
	c.mu.Lock()
	want := map[string]byte{}
	for f := range c.refused.why {
		if subs := c.subs.byFilter[f]; len(subs) > 0 {
			want[f] = maxQoS(subs)
		} else {
			delete(c.refused.why, f) // no longer wanted
		}
	}
	c.mu.Unlock()
	failed := c.subscribeMany(want)
	if c.Connected() {
		c.noteSubscribed(want, failed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.refused.why) > 0 {
		return true
	}
	c.refused.retrying = false
	return false
}

// refusedHealth is Health's reason while the broker refuses subscriptions
// on a connection that is up.
func (c *Client) refusedHealth() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for f := range c.refused.why {
		if len(c.subs.byFilter[f]) > 0 {
			n++
		}
	}
	if n == 0 {
		return "", false
	}
	_, why := c.refused.firstLocked()
	in := max(time.Until(c.refused.next), 0).Round(100 * time.Millisecond)
	return fmt.Sprintf("mqtt broker has not accepted %d of %d subscriptions (%s); retrying in %s, messages on them are not received meanwhile",
		n, len(c.subs.byFilter), why, in), true
}
