// Package ratelimit bounds failed authentication attempts per client
// address, for every door that takes a secret: the web UI's login and the
// MCP endpoint's bearer tokens.
package ratelimit

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Failures bounds failed attempts per client address: after MaxFailures
// failures within Window, attempts from that address are refused until the
// oldest failure leaves the window. Tokens are long random strings, so
// guessing is hopeless anyway; this keeps a script from trying.
type Failures struct {
	mu       sync.Mutex
	failures map[string][]time.Time
	now      func() time.Time
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

// Succeed forgets addr's failures.
func (l *Failures) Succeed(addr string) {
	l.mu.Lock()
	delete(l.failures, addr)
	l.mu.Unlock()
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
