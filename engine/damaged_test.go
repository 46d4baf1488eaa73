package engine

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// TestDamagedRuleNotArmed: a rule whose stored params were damaged on
// disk is not armed at the next start (it would fire without the input it
// was deployed with) and lists as broken; the other rules fire as before.
func TestDamagedRuleNotArmed(t *testing.T) {
	h := newHouse(t, Config{})
	for _, name := range []string{"porch-press", "hall-press"} {
		light := strings.TrimSuffix(name, "-press") + "_light.set"
		h.deploy(`{"name": "` + name + `", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
		  "steps": [{"id": "on", "call": "` + light + `", "args": {"state": "ON"}}]}`)
	}
	h.stop()
	db, err := sql.Open("sqlite", filepath.Join(h.dir, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE rules SET params = '{"light":' WHERE name = 'porch-press'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	h.start()
	ctx := context.Background()
	if err := h.sim.Press(ctx, "on"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the sound rule's firing", func() bool { return len(h.firings("hall-press")) == 1 })
	if n := len(h.firings("porch-press")); n != 0 {
		t.Errorf("the damaged rule fired %d times", n)
	}
	list, err := h.eng.ListRules(ctx, 0)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListRules: %d rules, %v", len(list), err)
	}
	if r := list[1]; r.Name != "porch-press" || r.Status != "broken" || !strings.Contains(r.Broken, "params column is not a valid JSON object") {
		t.Errorf("the damaged rule: %s %s %q", r.Name, r.Status, r.Broken)
	}
}
