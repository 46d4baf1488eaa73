package storage

import (
	"context"
	"strconv"
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
		{"first", []HistoryPoint{text(0, "true"), text(1, "false"), text(2, "false")}, "false", at(1), at(1)},
		{"same value later", []HistoryPoint{text(5, "false")}, "false", at(1), at(1)},
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

// TestHistoryWritesOnlyChanges: a point whose value is its entity's
// latest, stored or earlier in the batch, is not written, as rules
// compare values (numbers by value, a number's text too, a too-large
// value's marker by its size); a different value is.
func TestHistoryWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	num := func(e string, m int, n float64) HistoryPoint {
		return HistoryPoint{Entity: e, T: at(m), IsNum: true, Num: n}
	}
	text := func(e string, m int, v string) HistoryPoint { return HistoryPoint{Entity: e, T: at(m), JSON: v} }
	big := func(n int) string { return `{"too_large_bytes":` + strconv.Itoa(n) + `}` }
	for _, tc := range []struct {
		name   string
		first  []HistoryPoint // written, then the batch after it
		then   []HistoryPoint
		rows   int // the entity's rows after both
		same   int // points of then not written
		latest string
	}{
		{"same text after a restart", []HistoryPoint{text("a", 0, "false")}, []HistoryPoint{text("a", 5, "false")}, 1, 1, "false"},
		{"a different text", []HistoryPoint{text("b", 0, "false")}, []HistoryPoint{text("b", 5, "true")}, 2, 0, "true"},
		{"a number by value", []HistoryPoint{num("c", 0, 21)}, []HistoryPoint{num("c", 5, 21.0), num("c", 6, 22)}, 2, 1, "22"},
		{"a number's text", []HistoryPoint{num("d", 0, 21)}, []HistoryPoint{text("d", 5, `"21"`)}, 1, 1, "21"},
		{"the same marker", []HistoryPoint{text("e", 0, big(4002))}, []HistoryPoint{text("e", 5, big(4002))}, 1, 1, big(4002)},
		{"another marker", []HistoryPoint{text("f", 0, big(4002))}, []HistoryPoint{text("f", 5, big(4003))}, 2, 0, big(4003)},
		{"repeats within a batch", nil, []HistoryPoint{text("g", 0, "on"), text("g", 1, "on"), text("g", 2, "off"), text("g", 3, "off"), text("g", 4, "on")}, 3, 2, "on"},
		{"in time order, not the batch's", []HistoryPoint{text("h", 0, "1")}, []HistoryPoint{text("h", 6, "2"), text("h", 5, "1")}, 2, 1, "2"},
	} {
		if _, err := s.WriteHistory(ctx, tc.first, HistoryWrite{}); err != nil {
			t.Fatal(err)
		}
		w, err := s.WriteHistory(ctx, tc.then, HistoryWrite{})
		if err != nil {
			t.Fatal(err)
		}
		e := tc.then[0].Entity
		rows, err := s.HistoryChanges(ctx, e, at(-1), at(60), 100)
		if err != nil {
			t.Fatal(err)
		}
		v, since, _, _ := s.HistorySince(ctx, e)
		latest := v.JSON
		if v.IsNum {
			latest = strconv.FormatFloat(v.Num, 'g', -1, 64)
		}
		last := rows[len(rows)-1]
		if len(rows) != tc.rows || w.Same != tc.same || w.Rows != len(tc.then)-tc.same || latest != tc.latest || !since.Equal(last.T) {
			t.Errorf("%s: %d rows (want %d), %+v (want %d same), latest %s since %v (want %s since %v)",
				tc.name, len(rows), tc.rows, w, tc.same, latest, since, tc.latest, last.T)
		}
	}
}
