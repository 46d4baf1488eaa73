package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

func TestFailuresWindow(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := New(func() time.Time { return now })
	for range MaxFailures - 1 {
		l.Fail("10.0.0.7")
	}
	if w := l.Wait("10.0.0.7"); w != 0 {
		t.Fatalf("below the limit: wait %v", w)
	}
	l.Fail("10.0.0.7")
	if w := l.Wait("10.0.0.7"); w != Window {
		t.Fatalf("at the limit: wait %v, want %v", w, Window)
	}
	if w := l.Wait("10.0.0.8"); w != 0 {
		t.Fatalf("another address: wait %v", w)
	}
	now = now.Add(Window + time.Second)
	if w := l.Wait("10.0.0.7"); w != 0 {
		t.Fatalf("after the window: wait %v", w)
	}
	l.Fail("10.0.0.9")
	l.Succeed("10.0.0.9")
	if _, ok := l.failures["10.0.0.9"]; ok {
		t.Fatal("a success keeps the failures")
	}
	for i := range MaxAddresses + 5 {
		now = now.Add(time.Millisecond)
		l.Fail(fmt.Sprintf("10.1.%d.%d", i/256, i%256))
	}
	if len(l.failures) > MaxAddresses {
		t.Fatalf("tracking %d addresses, bound %d", len(l.failures), MaxAddresses)
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:5555":        "192.0.2.1",
		"[2001:db8::1]:80":      "2001:db8::/64",
		"[2001:db8::ffff:1]:80": "2001:db8::/64", // one /64, however many addresses it uses
		"[2001:db8:0:1::1]:80":  "2001:db8:0:1::/64",
		"[::ffff:192.0.2.1]:80": "::ffff:192.0.2.1",
		"pipe":                  "pipe",
	} {
		if got := ClientKey(in); got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", in, got, want)
		}
	}
}
