package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// shares are the logbook's shares of maxRows in a house of the owner
// alone.
func shares(maxRows int) *LogShares { return NewLogShares(maxRows, "owner", nil) }

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
	if _, err := s.WriteLog(ctx, in, nil); err != nil {
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

// TestLogbookBounds: the newest maxRows are kept, the bus's entries
// (events, availability) within half of them and the others within the
// rest, and entries older than the retention are purged.
func TestLogbookBounds(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	var trimmed LogTrimmed
	for i := range 10 {
		kind := []string{"event", "availability"}[i%2]
		n, err := s.WriteLog(ctx, []LogEntry{{T: t0.Add(time.Duration(i) * time.Hour), Kind: kind, Text: fmt.Sprint(i)}}, shares(8))
		if err != nil {
			t.Fatal(err)
		}
		trimmed.Bus, trimmed.Own = trimmed.Bus+n.Bus, trimmed.Own+n.Own
	}
	got, _ := s.ListLog(ctx, LogFilter{})
	if fmt.Sprint(logTexts(got)) != "[9 8 7 6]" || trimmed != (LogTrimmed{Bus: 6}) {
		t.Fatalf("kept %v, trimmed %+v", logTexts(got), trimmed)
	}
	n, err := s.PurgeLog(ctx, t0.Add(8*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if got, _ := s.ListLog(ctx, LogFilter{}); fmt.Sprint(logTexts(got)) != "[9 8]" {
		t.Fatalf("after purge: %v", logTexts(got))
	}
}

// TestLogbookBusKeepsToItsShare: a flood of the bus's entries past its
// share trims only its own oldest entries; the rules', firings',
// approvals' and server's lines stay, and are trimmed within their own
// share only by their own kind's later lines.
func TestLogbookBusKeepsToItsShare(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	own := []LogEntry{{T: t0, Kind: "server", Text: "started"}, {T: t0, Kind: "rule", Principal: "owner", Text: "installed"},
		{T: t0, Kind: "approval", Text: "approved"}, {T: t0, Kind: "firing", Principal: "owner", Text: "fired"}}
	if _, err := s.WriteLog(ctx, own, shares(10)); err != nil {
		t.Fatal(err)
	}
	var bus int
	for i := range 20 {
		flood := []LogEntry{{T: t0.Add(time.Second), Kind: "event", Text: fmt.Sprint("press ", i)}, {T: t0.Add(time.Second), Kind: "availability", Text: "offline"}}
		n, err := s.WriteLog(ctx, flood, shares(10))
		if err != nil || n.Own != 0 {
			t.Fatalf("trimmed %+v, %v", n, err)
		}
		bus += n.Bus
	}
	for _, tc := range []struct {
		kind string
		want int
	}{{"server", 1}, {"rule", 1}, {"approval", 1}, {"firing", 1}, {"event", 2}, {"availability", 3}} {
		if got, _ := s.ListLog(ctx, LogFilter{Kind: tc.kind}); len(got) != tc.want {
			t.Errorf("%s: %d kept, want %d", tc.kind, len(got), tc.want)
		}
	}
	if bus != 40-5 {
		t.Errorf("trimmed %d of the bus's, want 35", bus)
	}
	// The rules' firings (a guest's busy rules) are trimmed within their
	// own share: the house's lines and the rule changes stay.
	n, err := s.WriteLog(ctx, []LogEntry{{T: t0.Add(2 * time.Second), Kind: "firing", Principal: "owner", Text: "a"}, {T: t0.Add(2 * time.Second), Kind: "firing", Principal: "owner", Text: "b"}}, shares(10))
	server, _ := s.ListLog(ctx, LogFilter{Kind: "server"})
	changes, _ := s.ListLog(ctx, LogFilter{Kind: "rule"})
	if err != nil || n != (LogTrimmed{Rules: 1}) || len(server) != 1 || len(changes) != 1 {
		t.Fatalf("trimmed %+v (%v); server lines %d, rule changes %d, want only the oldest firing trimmed", n, err, len(server), len(changes))
	}
	// Rule changes (a guest switching its own rule in a loop) are trimmed
	// within their own share: the firings stay.
	n, err = s.WriteLog(ctx, []LogEntry{{T: t0.Add(3 * time.Second), Kind: "rule", Principal: "owner", Text: "disabled"}}, shares(10))
	firings, _ := s.ListLog(ctx, LogFilter{Kind: "firing"})
	if got, _ := s.ListLog(ctx, LogFilter{Kind: "approval"}); err != nil || n != (LogTrimmed{Rules: 1}) || len(got) != 1 || len(firings) != 2 {
		t.Fatalf("trimmed %+v (%v); approval lines %d, firings %d, want the older rule change trimmed", n, err, len(got), len(firings))
	}
	// The house's share is trimmed by its own lines, the oldest first.
	n, err = s.WriteLog(ctx, []LogEntry{{T: t0.Add(3 * time.Second), Kind: "approval", Text: "a"}, {T: t0.Add(3 * time.Second), Kind: "approval", Text: "b"}}, shares(10))
	if got, _ := s.ListLog(ctx, LogFilter{Kind: "server"}); err != nil || n != (LogTrimmed{Own: 1}) || len(got) != 0 {
		t.Fatalf("trimmed %+v (%v); server lines %d, want the oldest one trimmed", n, err, len(got))
	}
}

// TestLogbookHelperLinesKeepToTheDevicesShare: a guest's rule toggling a
// helper in a loop wrote a line per change into the house's share and
// evicted every server and approval line within seconds. A helper is a
// device: its lines are trimmed in the devices' share.
func TestLogbookHelperLinesKeepToTheDevicesShare(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	own := []LogEntry{{T: t0, Kind: "server", Text: "started"}, {T: t0, Kind: "approval", Text: "approved"}}
	if _, err := s.WriteLog(ctx, own, shares(10)); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		line := []LogEntry{{T: t0.Add(time.Second), Kind: "helper", Device: "vacation_mode", Text: fmt.Sprint("vacation_mode: off → on ", i)}}
		if _, err := s.WriteLog(ctx, line, shares(10)); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []string{"server", "approval"} {
		if got, _ := s.ListLog(ctx, LogFilter{Kind: kind}); len(got) != 1 {
			t.Errorf("%s lines: %d kept, want 1", kind, len(got))
		}
	}
	if got, _ := s.ListLog(ctx, LogFilter{Kind: "helper"}); len(got) != 5 {
		t.Errorf("helper lines: %d kept, want the devices' share of 10 rows (5)", len(got))
	}
}

// TestLogbookSharesMigrated: a logbook written before the shares existed
// (version 17) is numbered into them, so the first write after trims each
// share to its window, the oldest first; a text the bus made huge is cut.
func TestLogbookSharesMigrated(t *testing.T) {
	dir := t.TempDir()
	db := openAtVersion(t, dir, 17)
	huge := "6" + strings.Repeat("é", 100_000)
	for i, kind := range []string{"server", "event", "rule", "event", "availability", "approval", "event"} {
		text := fmt.Sprint(i)
		if i == 6 {
			text = huge
		}
		if _, err := db.Exec(`INSERT INTO logbook (t, kind, text) VALUES (?, ?, ?)`, i, kind, text); err != nil {
			t.Fatal(err)
		}
	}
	s := migrated(t, db, dir)
	got, _ := s.ListLog(context.Background(), LogFilter{Limit: 1})
	cut := "6" + strings.Repeat("é", 127) + "… (200001 bytes)"
	if len(got) != 1 || got[0].Text != cut {
		t.Fatalf("the huge text migrated as %.60q…, want it cut", got[0].Text)
	}
	n, err := s.WriteLog(context.Background(), []LogEntry{{T: time.Unix(0, 7), Kind: "event", Text: "7"}}, shares(6))
	if err != nil || n != (LogTrimmed{Bus: 2}) {
		t.Fatalf("trimmed %+v, %v", n, err)
	}
	got, _ = s.ListLog(context.Background(), LogFilter{})
	if fmt.Sprint(logTexts(got)) != "[7 "+cut+" 5 4 2 0]" {
		t.Fatalf("kept %v", logTexts(got))
	}
}

// TestLogbookGuestKeepsToItsPart: a guest's flood of firings and rule
// changes past its part of the rules' share trims only its own oldest
// lines: the owner's firing and rule-change lines, another guest's, and
// the house's lines stay (attacker round 17: a guest's 100 busy rules left
// 3 of the owner's 23 firing lines).
func TestLogbookGuestKeepsToItsPart(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	// 80 rows: the firings' 20, the owner's 10 of them, the guests' 10 in
	// three parts (guest, visitor, any other name) of 3; the rule changes'
	// 4, the owner's 2, each guest part 1.
	sh := NewLogShares(80, "owner", []string{"owner", "guest", "visitor"})
	kept := []LogEntry{{T: t0, Kind: "server", Text: "started"}, {T: t0, Kind: "approval", Principal: "guest", Text: "approval asked"},
		{T: t0, Kind: "rule", Principal: "owner", Rule: "porch", Text: "porch installed"},
		{T: t0, Kind: "firing", Principal: "visitor", Rule: "v", Text: "v fired"}}
	for i := range 5 {
		kept = append(kept, LogEntry{T: t0, Kind: "firing", Principal: "owner", Rule: "porch", Text: fmt.Sprint("porch fired ", i)})
	}
	if _, err := s.WriteLog(ctx, kept, sh); err != nil {
		t.Fatal(err)
	}
	var trimmed LogTrimmed
	for i := range 50 {
		var flood []LogEntry
		for j := range 4 {
			kind := []string{"firing", "rule"}[j%2]
			flood = append(flood, LogEntry{T: t0.Add(time.Second), Kind: kind, Principal: "guest", Rule: "g", Text: fmt.Sprintf("g %d.%d", i, j)},
				LogEntry{T: t0.Add(time.Second), Kind: kind, Principal: "gone", Rule: "x", Text: fmt.Sprintf("x %d.%d", i, j)})
		}
		n, err := s.WriteLog(ctx, flood, sh)
		if err != nil {
			t.Fatal(err)
		}
		trimmed = LogTrimmed{trimmed.Bus + n.Bus, trimmed.Rules + n.Rules, trimmed.Guests + n.Guests, trimmed.Own + n.Own}
	}
	all, _ := s.ListLog(ctx, LogFilter{})
	texts := strings.Join(logTexts(all), "|")
	for _, en := range kept {
		if !strings.Contains(texts, en.Text) {
			t.Errorf("%q evicted by the guest's flood", en.Text)
		}
	}
	for _, tc := range []struct{ rule, want string }{{"g", "[g 49.3 g 49.2 g 49.0 g 48.2]"}, {"x", "[x 49.3 x 49.2 x 49.0 x 48.2]"}} {
		if got, _ := s.ListLog(ctx, LogFilter{Rule: tc.rule}); fmt.Sprint(logTexts(got)) != tc.want {
			t.Errorf("rule %s kept %v, want %s", tc.rule, logTexts(got), tc.want)
		}
	}
	if trimmed != (LogTrimmed{Guests: 2 * (100 - 3 + 100 - 1)}) {
		t.Errorf("trimmed %+v", trimmed)
	}
	// The owner's own firings are trimmed within the owner's part of the
	// firings only: its rule change stays.
	var more []LogEntry
	for i := range 6 {
		more = append(more, LogEntry{T: t0.Add(2 * time.Second), Kind: "firing", Principal: "owner", Rule: "porch", Text: fmt.Sprint("porch again ", i)})
	}
	n, err := s.WriteLog(ctx, more, sh)
	if got, _ := s.ListLog(ctx, LogFilter{Rule: "v"}); err != nil || n != (LogTrimmed{Rules: 1}) || len(got) != 1 {
		t.Fatalf("trimmed %+v (%v); the visitor's lines %d", n, err, len(got))
	}
}

// TestLogbookPartsMigrated: a logbook of version 18 has its rules' lines
// numbered by principal, so the first write of a guest's line trims only
// that guest's oldest.
func TestLogbookPartsMigrated(t *testing.T) {
	dir := t.TempDir()
	db := openAtVersion(t, dir, 18)
	rows := []struct{ kind, who string }{{"rule", "owner"}, {"firing", "guest"}, {"firing", "owner"}, {"firing", "guest"},
		{"server", ""}, {"firing", "guest"}, {"rule", "owner"}}
	for i, r := range rows {
		share := map[string]int{"rule": 2, "firing": 2, "server": 0}[r.kind]
		if _, err := db.Exec(`INSERT INTO logbook (t, kind, principal, text, share, seq) VALUES (?, ?, ?, ?, ?, ?)`, i, r.kind, r.who, fmt.Sprint(i), share, i+1); err != nil {
			t.Fatal(err)
		}
	}
	s := migrated(t, db, dir)
	// 32 rows: the rules' 8, the owner's 4, each guest part 2.
	n, err := s.WriteLog(context.Background(), []LogEntry{{T: time.Unix(0, 7), Kind: "firing", Principal: "guest", Text: "7"}}, NewLogShares(32, "owner", []string{"guest"}))
	if err != nil || n != (LogTrimmed{Guests: 2}) {
		t.Fatalf("trimmed %+v, %v", n, err)
	}
	got, _ := s.ListLog(context.Background(), LogFilter{})
	if fmt.Sprint(logTexts(got)) != "[7 6 5 4 2 0]" {
		t.Fatalf("kept %v", logTexts(got))
	}
}
