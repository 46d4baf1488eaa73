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

// TestAdmit: a right token passes a throttled address and does not clear
// its count; wrong tokens and none wait there; another address is free.
func TestAdmit(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	l := New(func() time.Time { return now })
	const addr = "10.0.0.9"
	wrong := Attempt{Addr: addr, Presented: true}
	right := Attempt{Addr: addr, Presented: true, Right: true}
	for i := range MaxFailures - 1 {
		if pass, _ := l.Admit(wrong); pass {
			t.Fatalf("wrong token %d passed", i)
		}
		if pass, _ := l.Admit(right); !pass {
			t.Fatalf("right token after %d wrong ones refused", i+1)
		}
	}
	if pass, _ := l.Admit(Attempt{Addr: addr}); pass {
		t.Fatal("no token passed")
	}
	l.Admit(wrong) // the tenth: a right token in between did not reset the count
	cases := []struct {
		name     string
		a        Attempt
		pass     bool
		throttle bool
	}{
		{"right token passes", right, true, false},
		{"right broker password waits", Attempt{Addr: addr, Presented: true, Right: true, Guessable: true}, false, true},
		{"wrong token waits", wrong, false, true},
		{"no token waits", Attempt{Addr: addr}, false, true},
		{"another address", Attempt{Addr: "10.0.0.10", Presented: true}, false, false},
	}
	for _, c := range cases {
		pass, wait := l.Admit(c.a)
		if pass != c.pass || (wait > 0) != c.throttle {
			t.Errorf("%s: pass %v wait %v, want pass %v throttled %v", c.name, pass, wait, c.pass, c.throttle)
		}
	}
	if failed, throttled := l.Counts(); failed != MaxFailures+1 || throttled != 3 {
		t.Errorf("counts: %d failed, %d throttled; want %d and 3", failed, throttled, MaxFailures+1)
	}
}
