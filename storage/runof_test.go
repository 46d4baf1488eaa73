package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestGetRunOf: a run is found only for its own principal; another
// principal's run is ErrNotFound like an unknown or expired one, and its
// envelope is never read.
func TestGetRunOf(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	now := time.Now()
	env := `{"run_id":"r1","outcome":{"ok":true,"status":"success"},"pad":"` + strings.Repeat("x", 100<<10) + `"}`
	runs := []Run{
		{ID: "r1", Principal: "owner", Kind: KindTest, Status: "success", OK: true, Started: now, Level: "full", Envelope: []byte(env), Expires: now.Add(time.Hour)},
		{ID: "r2", Principal: "owner", Kind: KindTest, Status: "success", OK: true, Started: now, Level: "full", Envelope: []byte(`{}`), Expires: now.Add(-time.Hour)},
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, principal string }{{"r1", "guest"}, {"r1", ""}, {"r2", "owner"}, {"nope", "owner"}} {
		reads := s.EnvelopeReads()
		if _, err := s.GetRunOf(ctx, tc.id, tc.principal); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetRunOf(%s, %q): %v, want ErrNotFound", tc.id, tc.principal, err)
		}
		if s.EnvelopeReads() != reads {
			t.Errorf("GetRunOf(%s, %q) read an envelope", tc.id, tc.principal)
		}
	}
	r, err := s.GetRunOf(ctx, "r1", "owner")
	if err != nil || string(r.Envelope) != env || s.EnvelopeReads() != 1 {
		t.Fatalf("the owner's run: %v, %d envelope reads", err, s.EnvelopeReads())
	}
}
