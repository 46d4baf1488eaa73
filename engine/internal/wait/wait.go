// Package wait is a rule's wait step against the live devices: the awaited
// event, or a condition that holds, for a while when it must.
package wait

import (
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/rules"
)

// Waiter is one wait step's state: the signal that the wait is over, and the
// timer of a condition that must hold For a while.
type Waiter struct {
	req   *rules.WaitRequest
	watch map[string]bool // the states the condition reads (empty: any)
	met   chan struct{}

	mu   sync.Mutex
	hold *time.Timer // the condition holds since; fires at For
}

// New makes the waiter of req.
func New(req *rules.WaitRequest) *Waiter {
	wt := &Waiter{req: req, watch: map[string]bool{}, met: make(chan struct{}, 1)}
	for _, id := range req.Entities {
		wt.watch[id] = true
	}
	return wt
}

// Met is told once the wait is over.
func (wt *Waiter) Met() <-chan struct{} { return wt.met }

func (wt *Waiter) signal() {
	select {
	case wt.met <- struct{}{}:
	default:
	}
}

// Change is the device catalog's subscriber: the awaited event, or a
// state the condition reads.
func (wt *Waiter) Change(ch devices.Change) {
	switch req := wt.req; {
	case req.Event != "" && ch.Kind == devices.ChangeEvent && ch.ID == req.Event:
		if rules.EventMatches(req.EventValue, ch.Value) {
			wt.signal()
		}
	case ch.Kind == devices.ChangeState && (len(wt.watch) == 0 || wt.watch[ch.ID]):
		wt.Evaluate()
	}
}

// Evaluate checks the condition: met at once, or once it held For.
func (wt *Waiter) Evaluate() {
	if wt.req.Check == nil {
		return
	}
	ok := wt.req.Check()
	wt.mu.Lock()
	defer wt.mu.Unlock()
	switch {
	case ok && wt.req.For <= 0:
		wt.signal()
	case ok && wt.hold == nil:
		wt.hold = time.AfterFunc(wt.req.For, wt.signal)
	case !ok && wt.hold != nil:
		wt.hold.Stop()
		wt.hold = nil
	}
}

// Stop stops the timer of a condition that holds.
func (wt *Waiter) Stop() {
	wt.mu.Lock()
	if wt.hold != nil {
		wt.hold.Stop()
	}
	wt.mu.Unlock()
}
