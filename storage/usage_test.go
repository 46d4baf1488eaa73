package storage

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStoredUsage: a principal's unexpired test runs and idempotency
// records, counted and sized without reading them, through indexes (the
// owner of a big house keeps hundreds of thousands of firings).
func TestStoredUsage(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	env := `{"run_id":"x","outcome":{"ok":true}}`
	var runs []Run
	for i, r := range []struct {
		principal, kind string
		expires         time.Time
	}{
		{"guest", KindTest, now.Add(time.Hour)},
		{"guest", KindTest, now.Add(2 * time.Hour)},
		{"guest", KindTest, now.Add(-time.Hour)}, // expired
		{"guest", KindFiring, now.Add(time.Hour)},
		{"owner", KindTest, now.Add(time.Hour)},
	} {
		runs = append(runs, Run{ID: NewRunID() + string(rune('a'+i)), Principal: r.principal, Kind: r.kind, Status: "success",
			Started: now, Expires: r.expires, Envelope: []byte(env)})
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIdem(ctx, Idem{Key: "guest\x00k", Principal: "guest", Hash: "h", Envelope: []byte(`{"a":1}`), Expires: now.Add(30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	u, err := s.StoredUsage(ctx, "guest")
	if err != nil || u.TestRuns != 2 || u.Bytes != int64(2*len(env)+len(`{"a":1}`)) || !u.OldestExpires.Equal(now.Add(30*time.Minute).UTC().Truncate(0)) {
		t.Fatalf("guest: %+v %v", u, err)
	}
	for _, q := range []string{usageRunsSQL, usageIdemSQL} {
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, "guest", 0)
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		for rows.Next() {
			var id, parent, notused int
			var detail string
			_ = rows.Scan(&id, &parent, &notused, &detail)
			plan.WriteString(detail + "; ")
		}
		rows.Close()
		if !strings.Contains(plan.String(), "INDEX runs_tests_by_principal") && !strings.Contains(plan.String(), "INDEX idempotency_by_principal") {
			t.Errorf("%s: plan %s", q, plan.String())
		}
	}
}
