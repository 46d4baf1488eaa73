package storage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestLogSharesPartOf: a helper's change a rule made (its principal set)
// is filed in the rules' share, in that principal's part, as its firings
// are; one no principal made stays in the devices' share.
func TestLogSharesPartOf(t *testing.T) {
	sh := NewLogShares(80, "owner", []string{"owner", "guest"})
	for _, tc := range []struct {
		name   string
		e      LogEntry
		want   logPart
		bus    bool
		guests bool
	}{
		{"a timer's end", LogEntry{Kind: "helper"}, logPart{share: shareBus}, true, false},
		{"a guest rule's toggle", LogEntry{Kind: "helper", Principal: "guest", Rule: "g"}, logPart{shareRules, "guest"}, false, true},
		{"the owner rule's toggle", LogEntry{Kind: "helper", Principal: "owner", Rule: "o"}, logPart{shareRules, "owner"}, false, false},
		{"a removed principal's", LogEntry{Kind: "helper", Principal: "gone"}, logPart{shareRules, ""}, false, true},
		{"the guest's firing", LogEntry{Kind: "firing", Principal: "guest"}, logPart{shareRules, "guest"}, false, true},
		{"the guest's rule change", LogEntry{Kind: "rule", Principal: "guest"}, logPart{shareChanges, "guest"}, false, true},
		{"the owner's rule change", LogEntry{Kind: "rule", Principal: "owner"}, logPart{shareChanges, "owner"}, false, false},
		{"an event", LogEntry{Kind: "event", Principal: "guest"}, logPart{share: shareBus}, true, false},
	} {
		if got := sh.partOf(tc.e); got != tc.want {
			t.Errorf("%s: part %+v, want %+v", tc.name, got, tc.want)
		}
		if got := LogFromBus(tc.e); got != tc.bus {
			t.Errorf("%s: from the bus %v, want %v", tc.name, got, tc.bus)
		}
		if got := sh.Guest(tc.e); got != tc.guests {
			t.Errorf("%s: a guest's %v, want %v", tc.name, got, tc.guests)
		}
	}
}

// TestLogbookGuestHelperLinesKeepToItsPart: a guest's rule toggling a
// helper in a loop (attacker round 19) evicts none of the devices' lines:
// its helper lines are trimmed in the guest's part of the rules' share.
func TestLogbookGuestHelperLinesKeepToItsPart(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	sh := NewLogShares(80, "owner", []string{"owner", "guest"})
	kept := []LogEntry{{T: t0, Kind: "event", Device: "front_door", Text: "door opened"},
		{T: t0, Kind: "availability", Device: "hall_motion", Text: "hall_motion offline"},
		{T: t0, Kind: "helper", Device: "away", Text: "away: its time was up"}}
	if _, err := s.WriteLog(ctx, kept, sh); err != nil {
		t.Fatal(err)
	}
	var trimmed LogTrimmed
	for i := range 100 {
		line := []LogEntry{{T: t0.Add(time.Second), Kind: "helper", Device: "away", Principal: "guest", Rule: "g", Text: fmt.Sprint("away: off → on ", i)}}
		n, err := s.WriteLog(ctx, line, sh)
		if err != nil {
			t.Fatal(err)
		}
		trimmed.Bus, trimmed.Guests = trimmed.Bus+n.Bus, trimmed.Guests+n.Guests
	}
	for _, en := range kept {
		if got, _ := s.ListLog(ctx, LogFilter{Kind: en.Kind, Device: en.Device}); len(got) == 0 || got[len(got)-1].Text != en.Text {
			t.Errorf("%q evicted by the guest's helper flood", en.Text)
		}
	}
	// 80 rows: the rules' 20, the guests' 10 in two parts (guest, any
	// other name) of 5.
	if got, _ := s.ListLog(ctx, LogFilter{Rule: "g"}); len(got) != 5 || got[0].Text != "away: off → on 99" {
		t.Errorf("the guest's helper lines kept: %q", logTexts(got))
	}
	if trimmed != (LogTrimmed{Guests: 95}) {
		t.Errorf("trimmed %+v", trimmed)
	}
}

// TestLogbookFiringsCannotEvictRuleChanges: the owner's rule fired in a
// loop by a guest's helper toggles (attacker round 20) filled the owner's
// part and evicted "rule owner-plug installed". Rule changes keep a share
// of their own: any number of firings leave them.
func TestLogbookFiringsCannotEvictRuleChanges(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC)
	sh := NewLogShares(200, "owner", []string{"owner", "guest"})
	changes := []LogEntry{{T: t0, Kind: "rule", Principal: "owner", Rule: "owner-plug", Text: "rule owner-plug installed (by owner)"},
		{T: t0, Kind: "rule", Principal: "guest", Rule: "g", Text: "rule g installed (by guest)"}}
	if _, err := s.WriteLog(ctx, changes, sh); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		var flood []LogEntry
		for _, who := range []string{"owner", "guest"} {
			flood = append(flood, LogEntry{T: t0.Add(time.Second), Kind: "firing", Principal: who, Rule: who + "-vac", Text: fmt.Sprint("fired ", i)},
				LogEntry{T: t0.Add(time.Second), Kind: "helper", Principal: who, Rule: who + "-vac", Text: fmt.Sprint("toggled ", i)})
		}
		if _, err := s.WriteLog(ctx, flood, sh); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := s.ListLog(ctx, LogFilter{Kind: "rule"})
	if fmt.Sprint(logTexts(got)) != fmt.Sprint(logTexts([]LogEntry{changes[1], changes[0]})) {
		t.Errorf("rule changes kept %q, want both", logTexts(got))
	}
	// 200 rows: the firings' 50, the owner's 25.
	if got, _ := s.ListLog(ctx, LogFilter{Rule: "owner-vac"}); len(got) != 25 {
		t.Errorf("the owner's firings and helper lines kept %d, want its part (25)", len(got))
	}
}

// TestLogbookChangesMigrated: a logbook of version 19 has its rule
// changes moved to their own share, each part numbered again, so the
// next firings trim only firings.
func TestLogbookChangesMigrated(t *testing.T) {
	dir := t.TempDir()
	db := openAtVersion(t, dir, 19)
	rows := []struct{ kind, who string }{{"rule", "owner"}, {"firing", "owner"}, {"rule", "owner"}, {"firing", "owner"}, {"firing", "owner"}}
	for i, r := range rows {
		if _, err := db.Exec(`INSERT INTO logbook (t, kind, principal, text, share, part, seq) VALUES (?, ?, ?, ?, 2, ?, ?)`, i, r.kind, r.who, fmt.Sprint(i), r.who, i+1); err != nil {
			t.Fatal(err)
		}
	}
	s := migrated(t, db, dir)
	// 12 rows: the firings' 3, all the owner's with no guests.
	n, err := s.WriteLog(context.Background(), []LogEntry{{T: time.Unix(0, 5), Kind: "firing", Principal: "owner", Text: "5"}}, NewLogShares(12, "owner", nil))
	if err != nil || n != (LogTrimmed{Rules: 1}) {
		t.Fatalf("trimmed %+v, %v", n, err)
	}
	got, _ := s.ListLog(context.Background(), LogFilter{})
	if fmt.Sprint(logTexts(got)) != "[5 4 3 2 0]" {
		t.Fatalf("kept %v", logTexts(got))
	}
}
