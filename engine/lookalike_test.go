package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// TestStoredLookAlikesStillLoad: rules stored before deploys refused
// look-alike names (here "porch-late" and "Porch-Late") both load and arm
// at the next start, which warns naming both; a new look-alike is refused.
func TestStoredLookAlikesStillLoad(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	src := `{"name":"porch-late","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"off","call":"porch_light.set","args":{"state":"OFF"}}]}`
	h.deploy(src)
	h.stop()
	// Stored before: storage refuses the look-alike itself now, so the
	// old row is copied in SQL.
	db, err := sql.Open("sqlite", filepath.Join(h.dir, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx) // one connection: the temporary table is its own
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TEMP TABLE old AS SELECT * FROM rules WHERE name = 'porch-late'`,
		`UPDATE old SET name = 'Porch-Late'`, `INSERT INTO rules SELECT * FROM old`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := errors.Join(conn.Close(), db.Close()); err != nil {
		t.Fatal(err)
	}
	var logs testutil.LockedBuffer
	if h.store, err = storage.Open(ctx, h.dir); err != nil {
		t.Fatal(err)
	}
	h.eng = New(h.cfg, h.devs, h.store, slog.New(slog.NewTextHandler(&logs, nil)))
	if err := h.eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eng, store := h.eng, h.store
	t.Cleanup(func() { eng.Close(); _ = store.Close() })

	for _, name := range []string{"porch-late", "Porch-Late"} {
		if h.eng.sched.Rule(name) == nil {
			t.Errorf("stored rule %q not armed after the restart", name)
		}
	}
	if l := logs.String(); !strings.Contains(l, "cannot tell apart") || !strings.Contains(l, "porch-late") || !strings.Contains(l, "Porch-Late") {
		t.Errorf("no warning naming both look-alikes:\n%s", l)
	}
	r := h.execute(ExecuteRequest{Program: json.RawMessage(strings.Replace(src, "porch-late", "PORCH-LATE", 1))})
	if r.Outcome.OK || r.Outcome.Status != rules.StatusDenied || !strings.Contains(r.Outcome.Error, "looks the same") {
		t.Errorf("a third look-alike: %+v, want denied", r.Outcome)
	}
	// Either stored rule may still be replaced under its own name.
	h.redeploy(strings.Replace(src, "23:00", "23:15", 1))
}
