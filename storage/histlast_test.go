package storage

import (
	"context"
	"testing"
	"time"
)

// TestHistorySince: an entity's kept last change moves only when its
// value changes (within a batch or between batches), and outlives the
// raw rows' bound and purge.
func TestHistorySince(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	text := func(m int, v string) HistoryPoint { return HistoryPoint{Entity: "door", T: at(m), JSON: v} }
	for _, tc := range []struct {
		name      string
		batch     []HistoryPoint
		val       string
		since, tt time.Time
	}{
		{"first", []HistoryPoint{text(0, "true"), text(1, "false"), text(2, "false")}, "false", at(1), at(2)},
		{"same value later", []HistoryPoint{text(5, "false")}, "false", at(1), at(5)},
		{"a change", []HistoryPoint{text(6, "false"), text(7, "true")}, "true", at(7), at(7)},
		{"changed and back in one batch", []HistoryPoint{text(8, "false"), text(9, "true")}, "true", at(9), at(9)},
		{"a batch older than it", []HistoryPoint{text(3, "false")}, "true", at(9), at(9)},
		{"a batch out of order", []HistoryPoint{text(12, "false"), text(11, "true")}, "false", at(12), at(12)},
	} {
		if _, err := s.WriteHistory(ctx, tc.batch, HistoryWrite{}); err != nil {
			t.Fatal(err)
		}
		v, since, ok, err := s.HistorySince(ctx, "door")
		if !ok || err != nil || v.JSON != tc.val || !since.Equal(tc.since) || !v.T.Equal(tc.tt) {
			t.Errorf("%s: %+v since %v (%v, %v); want %s since %v at %v", tc.name, v, since, ok, err, tc.val, tc.since, tc.tt)
		}
	}
	sensor(t, s, "lux", at(10), time.Second, 500, HistoryWrite{MaxRows: 100})
	if _, err := s.PurgeHistory(ctx, at(60)); err != nil {
		t.Fatal(err)
	}
	if v, since, ok, err := s.HistorySince(ctx, "door"); !ok || err != nil || v.JSON != "false" || !since.Equal(at(12)) {
		t.Errorf("after the bound and a purge: %+v since %v (%v, %v)", v, since, ok, err)
	}
	if v, since, ok, _ := s.HistorySince(ctx, "lux"); !ok || !v.IsNum || v.Num != 9 || !since.Equal(at(10).Add(499*time.Second)) {
		t.Errorf("numbers: %+v since %v", v, since)
	}
	if _, _, ok, err := s.HistorySince(ctx, "never"); ok || err != nil {
		t.Errorf("an entity never recorded: %v, %v", ok, err)
	}
}
