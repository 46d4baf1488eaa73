package storage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func logTexts(es []LogEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Text
	}
	return out
}

func TestLogbookFiltersPagesAndSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	s, dir := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	in := []LogEntry{
		{T: t0, Kind: "server", Text: "started"},
		{T: t0.Add(time.Second), Kind: "event", Device: "bedroom_remote", Area: "bedroom", Text: "press toggle"},
		{T: t0.Add(2 * time.Second), Kind: "availability", Device: "hall_motion", Area: "hall", Text: "offline"},
		{T: t0.Add(3 * time.Second), Kind: "firing", Rule: "r1", Principal: "owner", Run: "run1", Status: "success", Text: "r1 fired"},
		{T: t0.Add(3 * time.Second), Kind: "event", Device: "bedroom_remote", Area: "bedroom", Text: "press off"},
	}
	if _, err := s.WriteLog(ctx, in, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    LogFilter
		want string
	}{
		{"all, newest first (same time: later written first)", LogFilter{}, "[press off r1 fired offline press toggle started]"},
		{"kind", LogFilter{Kind: "event"}, "[press off press toggle]"},
		{"device", LogFilter{Device: "hall_motion"}, "[offline]"},
		{"area", LogFilter{Area: "bedroom"}, "[press off press toggle]"},
		{"rule", LogFilter{Rule: "r1"}, "[r1 fired]"},
		{"limit", LogFilter{Limit: 2}, "[press off r1 fired]"},
	} {
		got, err := s.ListLog(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if g := fmt.Sprint(logTexts(got)); g != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, g, tc.want)
		}
	}
	// Paging from the last entry of a page goes on with the older ones,
	// also among entries of one instant.
	page, _ := s.ListLog(ctx, LogFilter{Limit: 1})
	next, err := s.ListLog(ctx, LogFilter{Limit: 2, Before: page[0].T, BeforeID: page[0].ID})
	if err != nil || fmt.Sprint(logTexts(next)) != "[r1 fired offline]" {
		t.Fatalf("next page: %v %v", logTexts(next), err)
	}
	if next[0].Run != "run1" || next[0].Principal != "owner" || next[0].Status != "success" || !next[0].T.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("fields: %+v", next[0])
	}
	s.Close()
	s2, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, _ := s2.ListLog(ctx, LogFilter{}); len(got) != len(in) {
		t.Fatalf("after reopening: %d entries, want %d", len(got), len(in))
	}
}

// TestLogbookBounds: the newest maxRows are kept, and entries older than
// the retention are purged.
func TestLogbookBounds(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	trimmed := 0
	for i := range 10 {
		n, err := s.WriteLog(ctx, []LogEntry{{T: t0.Add(time.Duration(i) * time.Hour), Kind: "event", Text: fmt.Sprint(i)}}, 4)
		if err != nil {
			t.Fatal(err)
		}
		trimmed += n
	}
	got, _ := s.ListLog(ctx, LogFilter{})
	if fmt.Sprint(logTexts(got)) != "[9 8 7 6]" || trimmed != 6 {
		t.Fatalf("kept %v, trimmed %d", logTexts(got), trimmed)
	}
	n, err := s.PurgeLog(ctx, t0.Add(8*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if got, _ := s.ListLog(ctx, LogFilter{}); fmt.Sprint(logTexts(got)) != "[9 8]" {
		t.Fatalf("after purge: %v", logTexts(got))
	}
}
