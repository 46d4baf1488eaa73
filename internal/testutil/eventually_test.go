package testutil

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	var n atomic.Int32
	if !Within(5*time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("a condition that comes true timed out")
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("polled %d times, want 3 (stop at the first true)", got)
	}
	start := time.Now()
	if Within(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds reported true")
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("gave up before the deadline")
	}
}

// fatalRecorder is a testing.TB that records Fatalf instead of stopping.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = format
}

func TestEventuallyNamesWhat(t *testing.T) {
	r := &fatalRecorder{TB: t}
	Eventually(r, time.Millisecond, "the light", func() bool { return false })
	if r.msg != "timed out after %v waiting for %s" {
		t.Fatalf("Fatalf(%q)", r.msg)
	}
	r.msg = ""
	Eventually(r, time.Second, "the light", func() bool { return true })
	if r.msg != "" {
		t.Fatalf("a condition that holds failed: %q", r.msg)
	}
}

func TestJSONTags(t *testing.T) {
	type rec struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
		C bool
	}
	if got, want := JSONTags(rec{}), "A:a B:b,omitempty C:"; got != want {
		t.Errorf("JSONTags = %q, want %q", got, want)
	}
}
