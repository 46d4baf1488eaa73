package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigRun is mkRun with an envelope of about size bytes.
func bigRun(principal, rule, status string, started time.Time, size int) Run {
	r := mkRun(rule, status, status == "success", started)
	r.Principal = principal
	r.Envelope = json.RawMessage(fmt.Sprintf(`{"run_id":%q,"pad":%q}`, r.ID, strings.Repeat("x", size)))
	return r
}

// TestWriteRunsTrimsByBytes: a rule's and a principal's stored firings
// are kept while their bytes fit, the oldest going first, never the
// newest of a rule's status; what went is counted.
func TestWriteRunsTrimsByBytes(t *testing.T) {
	const kb = 1 << 10
	e := int64(len(bigRun("alice", "porch", "success", t0, kb).Envelope)) // every envelope's size
	for _, tc := range []struct {
		name       string
		opts       WriteOptions
		keptPorch  int // of 20 successes and 1 old failure of porch (alice)
		keptAttic  int // of 20 successes of attic (alice)
		keptBob    int // of 20 successes of bob's cellar
		wantTrimmd Trimmed
	}{
		{"count only", WriteOptions{Trim: []string{"porch"}, KeepPerStatus: 50}, 21, 20, 20, Trimmed{}},
		{"rule bytes", WriteOptions{Trim: []string{"porch"}, KeepPerStatus: 50, MaxRuleBytes: 5*e + e/2}, 6, 20, 20, Trimmed{Rule: 15}},
		{"principal bytes", WriteOptions{TrimPrincipals: []string{"alice"}, MaxPrincipalBytes: 10*e + e/2}, 6, 5, 20, Trimmed{Principal: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t)
			var rows []Run
			rows = append(rows, bigRun("alice", "porch", "failed", t0.Add(-time.Hour), kb))
			for i := range 20 {
				at := t0.Add(time.Duration(i) * time.Second)
				rows = append(rows, bigRun("alice", "porch", "success", at, kb), bigRun("alice", "attic", "success", at.Add(time.Millisecond), kb),
					bigRun("bob", "cellar", "success", at, kb))
			}
			if err := s.InsertRuns(ctx, rows); err != nil {
				t.Fatal(err)
			}
			got, err := s.WriteRuns(ctx, nil, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			count := func(rule string) int {
				l, err := s.ListRuns(ctx, RunFilter{Rule: rule, Limit: 1000, SkipEnvelope: true})
				if err != nil {
					t.Fatal(err)
				}
				return len(l)
			}
			if p, a, b := count("porch"), count("attic"), count("cellar"); p != tc.keptPorch || a != tc.keptAttic || b != tc.keptBob {
				t.Errorf("kept porch %d attic %d cellar %d, want %d %d %d", p, a, b, tc.keptPorch, tc.keptAttic, tc.keptBob)
			}
			if got != tc.wantTrimmd {
				t.Errorf("trimmed %+v, want %+v", got, tc.wantTrimmd)
			}
			if l, err := s.ListRuns(ctx, RunFilter{Rule: "porch", Status: "failed"}); err != nil || len(l) != 1 {
				t.Errorf("porch's only failure: %d kept, %v", len(l), err)
			}
			newest := rows[len(rows)-3] // porch's newest success
			if _, err := s.GetRun(ctx, newest.ID); err != nil {
				t.Errorf("newest firing trimmed: %v", err)
			}
		})
	}
}

// TestPrincipalTrimTakesLargeNewest: a rule's newest firing of a status
// is kept by a principal's byte bound only while small; large ones (many
// rules' worth of MaxRunBytes) go oldest first like the rest.
func TestPrincipalTrimTakesLargeNewest(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var rows []Run
	for i, rule := range []string{"r0", "r1", "r2", "r3"} {
		rows = append(rows, bigRun("alice", rule, "success", t0.Add(time.Duration(i)*time.Second), 100<<10),
			bigRun("alice", rule, "failed", t0.Add(time.Duration(i)*time.Second+time.Millisecond), 1<<10))
	}
	if err := s.InsertRuns(ctx, rows); err != nil {
		t.Fatal(err)
	}
	got, err := s.WriteRuns(ctx, nil, WriteOptions{TrimPrincipals: []string{"alice"}, MaxPrincipalBytes: 250 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range []string{"r0", "r1", "r2", "r3"} {
		l, err := s.ListRuns(ctx, RunFilter{Rule: r, Limit: 10, SkipEnvelope: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range l {
			kept = append(kept, r+"/"+run.Status)
		}
	}
	want := "r0/failed r1/failed r2/failed r2/success r3/failed r3/success" // newest first
	if strings.Join(kept, " ") != want || got.Principal != 2 {
		t.Errorf("kept %q, trimmed %d; want %q, 2 trimmed", strings.Join(kept, " "), got.Principal, want)
	}
}
