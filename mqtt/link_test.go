package mqtt

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"
)

// TestTakeoverInference: which outages count as a session takeover (the
// broker closed a young connection, the first attempt got it back, and
// the session was still there), and how the reconnect wait grows with a
// streak of them and falls back after any other outage.
func TestTakeoverInference(t *testing.T) {
	reset := fmt.Errorf("read: %w", syscall.ECONNRESET)
	for _, tc := range []struct {
		name     string
		err      error
		lived    time.Duration
		attempts int
		present  bool
		takeover bool
	}{
		{"closed, back at once, session kept", io.EOF, time.Second, 1, true, true},
		{"reset, back at once, session kept", reset, time.Second, 1, true, true},
		{"a twin backing off a minute", io.EOF, time.Minute, 1, true, true},
		{"broker down a while (restart)", io.EOF, time.Second, 3, true, false},
		{"restarted broker without the session", io.EOF, time.Second, 1, false, false},
		{"a connection of hours", io.EOF, 3 * time.Hour, 1, true, false},
		{"silent broker", &silenceError{after: silenceLimit}, time.Second, 1, true, false},
		{"ping timeout", errors.New("pingresp not received, disconnecting"), time.Second, 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l linkState
			t0 := time.Now()
			l.connected(t0, false)
			if wait := l.lost(tc.err, t0.Add(tc.lived)); wait != firstRetry {
				t.Fatalf("first loss waits %s, want %s", wait, firstRetry)
			}
			l.attempts = tc.attempts
			if got := l.connected(t0.Add(tc.lived+time.Second), tc.present); got != tc.takeover {
				t.Fatalf("takeover = %v, want %v (state %+v)", got, tc.takeover, l)
			}
			if l.away != time.Second {
				t.Errorf("outage lasted %s, want 1s", l.away)
			}
		})
	}
	var l linkState
	now := time.Now()
	l.connected(now, false)
	var waits []time.Duration
	for range 8 {
		now = now.Add(time.Second)
		waits = append(waits, l.lost(io.EOF, now))
		l.attempts = 1
		l.connected(now, true)
	}
	want := []time.Duration{firstRetry, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("waits in a takeover streak = %v, want %v", waits, want)
	}
	l.lost(io.EOF, now.Add(time.Second))
	l.attempts = 2 // the broker was down: no takeover, the streak ends
	l.connected(now.Add(2*time.Second), true)
	if wait := l.lost(io.EOF, now.Add(3*time.Second)); wait != firstRetry || l.streak != 0 {
		t.Fatalf("after an ordinary outage: wait %s, streak %d", wait, l.streak)
	}
}

// TestTakeoverHealthClearsOnceTheTwinIsGone: a streak of takeovers makes
// the session unhealthy while the twins fight, connected or not; once the
// connection held outlives the longest backoff a twin waits, the twin is
// gone and the session is healthy again, well before takeoverForget.
func TestTakeoverHealthClearsOnceTheTwinIsGone(t *testing.T) {
	var l linkState
	now := time.Now()
	l.connected(now, false)
	for range 3 {
		now = now.Add(time.Second)
		l.lost(io.EOF, now)
		l.attempts = 1
		l.connected(now, true)
	}
	for _, tc := range []struct {
		name      string
		after     time.Duration
		connected bool
		want      bool
	}{
		{"just taken back", time.Second, true, true},
		{"disconnected meanwhile", 2 * time.Minute, false, true},
		{"connected less than a twin's longest backoff", takeoverMax, true, true},
		{"connected past any twin's backoff", takeoverLived, true, false},
		{"disconnected after the streak is forgotten", takeoverForget, false, false},
	} {
		if got := l.takenOver(now.Add(tc.after), tc.connected); got != tc.want {
			t.Errorf("%s: takenOver = %v, want %v", tc.name, got, tc.want)
		}
	}
}
