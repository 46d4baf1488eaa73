package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A firing is the context its body runs under: it must behave as
// context.WithTimeout(parent, maxWall) did, whether or not Done was asked
// for.
func TestFiringContextBehavesLikeWithTimeout(t *testing.T) {
	wait := func(t *testing.T, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("Done never closed")
		}
	}
	t.Run("running", func(t *testing.T) {
		f := newFiring(context.Background(), time.Hour)
		if err := f.Err(); err != nil {
			t.Fatalf("Err = %v", err)
		}
		if d, ok := f.Deadline(); !ok || time.Until(d) < 59*time.Minute {
			t.Fatalf("Deadline = %v, %v", d, ok)
		}
		select {
		case <-f.Done():
			t.Fatal("Done closed while running")
		default:
		}
		f.cancel(context.Canceled)
	})
	for _, lazy := range []bool{false, true} {
		name := map[bool]string{false: "done-first", true: "err-only"}[lazy]
		t.Run("deadline/"+name, func(t *testing.T) {
			f := newFiring(context.Background(), 20*time.Millisecond)
			if !lazy {
				wait(t, f.Done())
			} else {
				time.Sleep(30 * time.Millisecond)
			}
			if err := f.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v, want DeadlineExceeded", err)
			}
			wait(t, f.Done())
			f.cancel(context.Canceled)
			if err := f.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after cancel Err = %v, want DeadlineExceeded kept", err)
			}
		})
		t.Run("cancel/"+name, func(t *testing.T) {
			f := newFiring(context.Background(), time.Hour)
			var done <-chan struct{}
			if !lazy {
				done = f.Done()
			}
			f.cancel(context.Canceled)
			if err := f.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Err = %v, want Canceled", err)
			}
			if lazy {
				done = f.Done()
			}
			wait(t, done)
		})
		t.Run("parent/"+name, func(t *testing.T) {
			parent, stop := context.WithCancel(context.Background())
			f := newFiring(parent, time.Hour)
			var done <-chan struct{}
			if !lazy {
				done = f.Done()
			}
			stop()
			if lazy {
				if err := f.Err(); !errors.Is(err, context.Canceled) {
					t.Fatalf("Err = %v, want Canceled", err)
				}
				done = f.Done()
			}
			wait(t, done)
			if err := f.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Err = %v, want Canceled", err)
			}
		})
	}
	t.Run("child", func(t *testing.T) {
		type key struct{}
		parent := context.WithValue(context.Background(), key{}, "v")
		f := newFiring(parent, time.Hour)
		child, stop := context.WithTimeout(f, time.Hour)
		defer stop()
		if child.Value(key{}) != "v" {
			t.Fatal("values do not pass through")
		}
		f.cancel(context.Canceled)
		wait(t, child.Done())
		if !errors.Is(child.Err(), context.Canceled) {
			t.Fatalf("child Err = %v", child.Err())
		}
	})
	t.Run("parent-deadline", func(t *testing.T) {
		parent, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		pd, _ := parent.Deadline()
		if d, _ := newFiring(parent, time.Hour).Deadline(); !d.Equal(pd) {
			t.Fatalf("Deadline = %v, want the parent's %v", d, pd)
		}
	})
}

// describeChange builds its text in one buffer; it must read as the
// Sprintf it replaced (JSON values, fmt.Sprint for what JSON cannot carry).
func TestDescribeChangeText(t *testing.T) {
	old := func(v any) string {
		b, err := pilotage.AppendJSON(nil, v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
	const entity = "hall_motion.occupancy"
	for _, c := range []struct{ prev, cur any }{
		{false, true}, {nil, 21.5}, {"off", "on"}, {1e21, math.NaN()},
		{map[string]any{"a": []any{1, "<b>"}}, strings.Repeat("x", 300)},
		{make(chan int), func() {}},
	} {
		got := describeChange(entity, devices.Change{Kind: devices.ChangeState, Prev: c.prev, Value: c.cur}, false)
		if want := fmt.Sprintf("%s changed from %s to %s", entity, old(c.prev), old(c.cur)); got != want {
			t.Errorf("state %v -> %v:\n got %s\nwant %s", c.prev, c.cur, got, want)
		}
		got = describeChange(entity, devices.Change{Kind: devices.ChangeEvent, Value: c.cur}, false)
		if want := fmt.Sprintf("%s fired %s", entity, old(c.cur)); got != want {
			t.Errorf("event %v:\n got %s\nwant %s", c.cur, got, want)
		}
	}
	if !raceEnabled {
		ch := devices.Change{Kind: devices.ChangeState, Prev: 20.5, Value: 21.0}
		// The buffer and the string copied out of it (no unsafe outside
		// rules but storage's envelope argument: issue 15).
		if n := testing.AllocsPerRun(100, func() { describeChange(entity, ch, false) }); n > 2 {
			t.Errorf("describeChange allocates %.0f objects, want 2", n)
		}
	}
}

// TestFiringEndsItsCommandsWait: a firing cancelled while its command
// waits ends the wait (on a goroutine of its own), and one registered
// after the cancellation is ended at once; a firing over (release) ends
// nothing.
func TestFiringEndsItsCommandsWait(t *testing.T) {
	got := make(chan error, 4)
	abort := func(err error) { got <- err }

	f := newFiring(context.Background(), time.Minute)
	f.onCancel(abort)
	f.cancel(context.Canceled)
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: abort(%v)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the firing did not end its command's wait")
	}

	f.onCancel(abort) // after the cancellation
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("registered late: abort(%v)", err)
		}
	default:
		t.Fatal("a wait registered after the cancellation was not ended at once")
	}

	f = newFiring(context.Background(), time.Minute)
	f.onCancel(abort)
	f.release()
	f.cancel(context.Canceled)
	select {
	case err := <-got:
		t.Fatalf("a firing over ended its command's wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
}
