package web

import (
	"net"
	"sync"
	"time"
)

// loginLimit bounds failed logins per client address: after loginFailures
// failures within loginWindow, logins from that address are refused until
// the oldest failure leaves the window. Tokens are long random strings, so
// guessing is hopeless anyway; this keeps a script from trying.
type loginLimit struct {
	mu       sync.Mutex
	failures map[string][]time.Time
	now      func() time.Time
}

const (
	loginFailures  = 10
	loginWindow    = 10 * time.Minute
	loginAddresses = 10000 // tracked at most; the oldest are dropped first
)

func newLoginLimit(now func() time.Time) *loginLimit {
	return &loginLimit{failures: map[string][]time.Time{}, now: now}
}

// clientKey is the address a request comes from, without its port.
func clientKey(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

// wait reports how long addr must wait before it may try again (0: now).
func (l *loginLimit) wait(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := l.recent(addr)
	if len(fs) < loginFailures {
		return 0
	}
	return fs[0].Add(loginWindow).Sub(l.now())
}

// fail records a failed login from addr.
func (l *loginLimit) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := append(l.recent(addr), l.now())
	if len(fs) > loginFailures {
		fs = fs[len(fs)-loginFailures:]
	}
	if _, known := l.failures[addr]; !known && len(l.failures) >= loginAddresses {
		l.dropOldest()
	}
	l.failures[addr] = fs
}

// succeed forgets addr's failures.
func (l *loginLimit) succeed(addr string) {
	l.mu.Lock()
	delete(l.failures, addr)
	l.mu.Unlock()
}

// recent returns addr's failures inside the window (l.mu held).
func (l *loginLimit) recent(addr string) []time.Time {
	fs := l.failures[addr]
	cut := l.now().Add(-loginWindow)
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
func (l *loginLimit) dropOldest() {
	var oldest string
	var at time.Time
	for a, fs := range l.failures {
		if last := fs[len(fs)-1]; oldest == "" || last.Before(at) {
			oldest, at = a, last
		}
	}
	delete(l.failures, oldest)
}
