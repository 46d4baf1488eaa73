package web

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// TestLoginsCannotLogOthersOut: round-2 attack: a guest logging in 4,100
// times evicted the owner's session (one global table, oldest first). Now
// a principal's logins end only its own oldest sessions.
func TestLoginsCannotLogOthersOut(t *testing.T) {
	f := newFixture(t, testPrincipals())
	owner := f.client()
	owner.login(ownerTok)
	var guest *client
	for range maxSessions + 10 {
		guest = f.client() // a fresh browser each time
		guest.login(guestTok)
	}
	if code, _, h := owner.get("/"); code != http.StatusOK {
		t.Fatalf("the owner after %d guest logins: %d %v, want still logged in", maxSessions+10, code, h.Get("Location"))
	}
	if code, _, _ := guest.get("/"); code != http.StatusOK {
		t.Fatalf("the guest's latest session: %d", code)
	}
}

// TestSessionTableBounds: per principal and in all; a full table ends the
// oldest session of the principal holding the most, never a principal's
// only sessions to make room for another's.
func TestSessionTableBounds(t *testing.T) {
	now := time.Now()
	s := newSessions(time.Hour, func() time.Time { now = now.Add(time.Millisecond); return now })
	ps := make([]*engine.Principal, 80)
	for i := range ps {
		ps[i] = &engine.Principal{Name: fmt.Sprintf("p%d", i)}
	}
	first := s.create(ps[0])
	for range 200 {
		s.create(ps[1])
	}
	if s.per["p1"] != maxSessionsPer || s.get(first.id) == nil {
		t.Fatalf("p1 holds %d sessions (want %d); p0's session kept: %v", s.per["p1"], maxSessionsPer, s.get(first.id) != nil)
	}
	for _, p := range ps[2:] {
		for range maxSessionsPer {
			s.create(p)
		}
	}
	if n := len(s.byID); n != maxSessions {
		t.Fatalf("%d sessions, want the table full at %d", n, maxSessions)
	}
	if s.get(first.id) == nil {
		t.Errorf("p0's only session was evicted to make room for principals holding %d each", maxSessionsPer)
	}
}
