// Package ratelimit bounds failed authentication attempts per client
// address, for every door that takes a secret: the web UI's login and the
// MCP endpoint's bearer tokens.
package ratelimit

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Failures bounds failed attempts per client address: after MaxFailures
// failures within Window, attempts from that address are refused until the
// oldest failure leaves the window, but for a right secret (see Admit).
// Tokens are long random strings, so guessing is hopeless anyway; this
// keeps a script from trying.
type Failures struct {
	mu       sync.Mutex
	failures map[string][]time.Time
	now      func() time.Time
	// failed and throttled count every door's refusals, for /healthz.
	failed, throttled atomic.Uint64
}

const (
	MaxFailures  = 10
	Window       = 10 * time.Minute
	MaxAddresses = 10000 // tracked at most; the oldest are dropped first
)

// New returns an empty limit reading the time from now (nil: time.Now).
func New(now func() time.Time) *Failures {
	if now == nil {
		now = time.Now
	}
	return &Failures{failures: map[string][]time.Time{}, now: now}
}

// ClientKey is the address a request comes from, without its port; an
// IPv6 address counts as its /64, which one client holds whole.
func ClientKey(remoteAddr string) string {
	h := remoteAddr
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		h = host
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Is6() && !ip.Is4In6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return h
}

// Wait reports how long addr must wait before it may try again (0: now).
func (l *Failures) Wait(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := l.recent(addr)
	if len(fs) < MaxFailures {
		return 0
	}
	return fs[0].Add(Window).Sub(l.now())
}

// Fail records a failed attempt from addr.
func (l *Failures) Fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := append(l.recent(addr), l.now())
	if len(fs) > MaxFailures {
		fs = fs[len(fs)-MaxFailures:]
	}
	if _, known := l.failures[addr]; !known && len(l.failures) >= MaxAddresses {
		l.dropOldest()
	}
	l.failures[addr] = fs
}

// Attempt is one presentation of a secret from an address, judged by the
// door that received it.
type Attempt struct {
	Addr      string // ClientKey of the request
	Presented bool   // a secret was sent at all (a missing one is not counted)
	Right     bool   // it matched a principal
	// Guessable: a secret a person chose, of any length (an MQTT broker
	// user's password): a right one is refused too while addr is
	// throttled, so that guessing it learns nothing.
	Guessable bool
}

// Admit applies the bound to a: it reports whether the attempt passes and,
// when it does not because addr is throttled, how long addr must wait.
// The bound is on what a guesser holds, its address, never on a right
// secret: a right one always passes, or whoever shares the owner's address
// (a NAT, an IPv6 /64, a reverse proxy) could lock the owner out with ten
// wrong ones. Guessing one is hopeless (configured tokens have at least 32
// characters, the server's own 256 random bits). A right secret never
// clears the count (one known guest token must not buy unlimited guesses
// at the others). A Guessable secret is the exception.
func (l *Failures) Admit(a Attempt) (pass bool, wait time.Duration) {
	if a.Right && !a.Guessable {
		return true, 0
	}
	if wait := l.Wait(a.Addr); wait > 0 {
		l.throttled.Add(1)
		return false, wait
	}
	if a.Right {
		return true, 0
	}
	if a.Presented {
		l.failed.Add(1)
		l.Fail(a.Addr)
	}
	return false, 0
}

// Counts reports the wrong secrets every door has refused and the
// attempts refused because their address was throttled.
func (l *Failures) Counts() (failed, throttled uint64) {
	return l.failed.Load(), l.throttled.Load()
}

// recent returns addr's failures inside the window (l.mu held).
func (l *Failures) recent(addr string) []time.Time {
	fs := l.failures[addr]
	cut := l.now().Add(-Window)
	i := 0
	for i < len(fs) && !fs[i].After(cut) {
		i++
	}
	if i == len(fs) {
		delete(l.failures, addr)
		return nil
	}
	return fs[i:]
}

// dropOldest forgets the address whose last failure is the oldest.
func (l *Failures) dropOldest() {
	var oldest string
	var at time.Time
	for a, fs := range l.failures {
		if last := fs[len(fs)-1]; oldest == "" || last.Before(at) {
			oldest, at = a, last
		}
	}
	delete(l.failures, oldest)
}
