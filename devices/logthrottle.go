package devices

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// The catalog logs what it refuses of the bus, and the bus is untrusted: a
// publisher repeating a bad config would otherwise write a line per
// message (a device's id reserved, a reservation ended, a config refused).
// Lines of one text at INFO and above are written at most logBurst times
// a logWindow; the rest are counted and said in one line when the window
// turns.
const (
	logBurst  = 20
	logWindow = time.Minute
)

type throttledLog struct {
	next slog.Handler
	st   *throttleState
}

type throttleState struct {
	mu         sync.Mutex
	now        func() time.Time
	start      time.Time
	seen       map[string]int
	suppressed map[string]int
}

func throttled(h slog.Handler, now func() time.Time) slog.Handler {
	return &throttledLog{next: h, st: &throttleState{now: now, seen: map[string]int{}, suppressed: map[string]int{}}}
}

func (t *throttledLog) Enabled(ctx context.Context, l slog.Level) bool { return t.next.Enabled(ctx, l) }

func (t *throttledLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo {
		return t.next.Handle(ctx, r)
	}
	gone, pass := t.st.admit(r.Message)
	for msg, n := range gone {
		s := slog.NewRecord(r.Time, slog.LevelWarn, "log lines suppressed: "+strconv.Itoa(n)+" more like this in "+logWindow.String(), 0)
		s.AddAttrs(slog.String("line", msg))
		_ = t.next.Handle(ctx, s)
	}
	if !pass {
		return nil
	}
	return t.next.Handle(ctx, r)
}

// admit counts msg in the current window; when a window ended, it returns
// the counts suppressed in it.
func (st *throttleState) admit(msg string) (gone map[string]int, pass bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if now := st.now(); now.Sub(st.start) >= logWindow {
		if len(st.suppressed) > 0 {
			gone, st.suppressed = st.suppressed, map[string]int{}
		}
		st.start, st.seen = now, map[string]int{}
	}
	if len(st.seen) < 4*logBurst || st.seen[msg] > 0 { // the texts are the code's: few
		st.seen[msg]++
	}
	if st.seen[msg] > logBurst {
		st.suppressed[msg]++
		return gone, false
	}
	return gone, true
}

func (t *throttledLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &throttledLog{next: t.next.WithAttrs(as), st: t.st}
}

func (t *throttledLog) WithGroup(name string) slog.Handler {
	return &throttledLog{next: t.next.WithGroup(name), st: t.st}
}
