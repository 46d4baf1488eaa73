package storage

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestThrottleStart: a window start is stored, only moves forward, and a
// version 10 database gains the table on open, keeping its rules.
func TestThrottleStart(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if _, ok, err := s.ThrottleStart(ctx, "porch"); ok || err != nil {
		t.Fatalf("never opened: ok %v, %v", ok, err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{t0, t0.Add(-time.Minute)} {
		if err := s.SetThrottleStart(ctx, "porch", at); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := s.ThrottleStart(ctx, "porch"); !ok || err != nil || !got.Equal(t0) {
		t.Fatalf("ThrottleStart = %v %v %v, want %v (an earlier start does not move it back)", got, ok, err, t0)
	}
	dir := filepath.Join(t.TempDir(), "v10")
	db := openAtVersion(t, dir, 10)
	if _, err := db.ExecContext(ctx, `INSERT INTO programs (ref, name, principal, body, risk, created_at) VALUES ('ref1', 'porch', 'owner', '{}', 'control', 1);
		INSERT INTO rules (name, ref, principal, enabled, installed_at, updated_at) VALUES ('porch', 'ref1', 'owner', 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	s2 := migrated(t, db, dir)
	if _, err := s2.GetRule(ctx, "porch"); err != nil {
		t.Fatalf("rule after migration 11: %v", err)
	}
	if _, ok, err := s2.ThrottleStart(ctx, "porch"); ok || err != nil {
		t.Fatalf("after migration 11: ok %v, %v; want an empty table", ok, err)
	}
}

// BenchmarkSetThrottleStart is the write a throttled rule makes before
// its body runs, once per window.
func BenchmarkSetThrottleStart(b *testing.B) {
	s := openBench(b, readConns)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		at = at.Add(time.Hour)
		if err := s.SetThrottleStart(ctx, "porch", at); err != nil {
			b.Fatal(err)
		}
	}
}
