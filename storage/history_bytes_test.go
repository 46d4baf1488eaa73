package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tableBytes counts the raw rows' bytes row by row (values and the rest
// of each row as the bound costs them) and the values' bytes alone.
func tableBytes(t *testing.T, s *Store) (rows, values int64) {
	t.Helper()
	err := s.r.QueryRowContext(context.Background(), `SELECT coalesce(sum(`+histCostSQL+`), 0),
		coalesce(sum(length(CAST(val AS BLOB))), 0) FROM history`).Scan(&rows, &values)
	if err != nil {
		t.Fatal(err)
	}
	return rows, values
}

// TestHistoryBoundedByBytes: a flood of 1 KiB values into a small
// MaxBytes leaves the table within it after every write, the oldest rows
// going first and counted; a small numeric state's history and its kept
// last change still work beside it.
func TestHistoryBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	const maxBytes, batches, perBatch = 64 << 10, 20, 50
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := HistoryWrite{MaxBytes: maxBytes, MaxRows: 1_000_000}
	trimmed := 0
	for b := range batches {
		var pts []HistoryPoint
		for i := range perBatch {
			n := b*perBatch + i
			v := fmt.Sprintf(`"%04d%s"`, n, strings.Repeat("x", 1018))
			pts = append(pts, HistoryPoint{Entity: "panel.note", T: t0.Add(time.Duration(n) * time.Second), JSON: v})
		}
		pts = append(pts, HistoryPoint{Entity: "hall.lux", T: t0.Add(time.Duration(b*perBatch) * time.Second), IsNum: true, Num: float64(b)})
		w, err := s.WriteHistory(ctx, pts, o)
		if err != nil {
			t.Fatal(err)
		}
		trimmed += w.TrimmedForBytes
		rows, values := tableBytes(t, s)
		counted, err := s.HistoryBytes(ctx)
		if err != nil || rows > maxBytes || values > maxBytes || counted != rows {
			t.Fatalf("batch %d: the table holds %d bytes (%d of values), counted %d (%v); bound %d", b, rows, values, counted, err, maxBytes)
		}
	}
	left, err := s.HistoryChanges(ctx, "panel.note", t0, t0.Add(time.Hour), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if written := batches * perBatch; trimmed == 0 || len(left) == 0 || trimmed+len(left) > written+batches {
		t.Fatalf("%d trimmed for bytes, %d left of %d", trimmed, len(left), written)
	}
	newest := t0.Add(time.Duration(batches*perBatch-1) * time.Second)
	if !left[len(left)-1].T.Equal(newest) || !left[0].T.After(t0.Add(time.Duration(batches*perBatch-len(left)-batches-1)*time.Second)) {
		t.Errorf("kept %v .. %v: not the newest (the newest is %v)", left[0].T, left[len(left)-1].T, newest)
	}
	v, since, ok, err := s.HistorySince(ctx, "hall.lux")
	if err != nil || !ok || v.Num != batches-1 || !since.Equal(t0.Add(time.Duration((batches-1)*perBatch)*time.Second)) {
		t.Errorf("hall.lux's last change: %+v since %v (%v, %v)", v, since, ok, err)
	}
	if lux, err := s.HistoryChanges(ctx, "hall.lux", left[0].T, t0.Add(time.Hour), 100); err != nil || len(lux) == 0 || lux[len(lux)-1].Num != batches-1 {
		t.Errorf("hall.lux's changes beside the kept notes: %+v (%v)", lux, err)
	}
}

// TestHistoryBytesMigrated: rows stored before the bound by bytes get
// their place in the running sum, so the bound counts them.
func TestHistoryBytesMigrated(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	db := openAtVersion(t, dir, 16)
	for i, v := range []any{nil, `"on"`, nil, `{"a":[1,2]}`} {
		var num any
		if v == nil {
			num = float64(i)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO history (entity, t, num, val) VALUES (1, ?, ?, ?)`, i, num, v); err != nil {
			t.Fatal(err)
		}
	}
	s := migrated(t, db, dir)
	rows, _ := tableBytes(t, s)
	if n, err := s.HistoryBytes(ctx); err != nil || n != rows || n != 4*histRowBytes+8+4+8+11 {
		t.Fatalf("after migration: %d bytes counted (%v), %d in the rows", n, err, rows)
	}
	if _, err := s.WriteHistory(ctx, []HistoryPoint{{Entity: "x", T: time.Now(), JSON: `"off"`}}, HistoryWrite{MaxBytes: 1}); err != nil {
		t.Fatal(err)
	}
	// The bound is kept even below one row; the kept last change stays.
	if rows, _ := tableBytes(t, s); rows != 0 {
		t.Fatalf("a bound below one row: %d bytes left", rows)
	}
	if v, _, ok, err := s.HistorySince(ctx, "x"); err != nil || !ok || v.JSON != `"off"` {
		t.Fatalf("the last change of x: %+v (%v, %v)", v, ok, err)
	}
}
