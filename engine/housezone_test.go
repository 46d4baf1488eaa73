package engine

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestRestartReasonInHouseZone: a held window that survives a restart is
// read back from storage in UTC; the trace's reason for the firing (its
// trigger decision and the narration) still names the due time in the
// house's zone, as every other time a person reads.
func TestRestartReasonInHouseZone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	h := newHouse(t, Config{TimeZone: tokyo})
	h.deploy(`{"name":"door-open","triggers":[{"id":"open","state":"front_door.contact","to":false,"for":"1500ms"}],
	 "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	if err := h.sim.Trigger(context.Background(), "front_door", map[string]any{"contact": false}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the persisted window", func() bool {
		p, err := h.store.ListPending(context.Background(), "door-open")
		return err == nil && len(p) == 1
	})
	h.stop()
	h.start()
	var runID string
	testutil.Eventually(t, 10*time.Second, "the firing after the restart", func() bool {
		runs := h.firings("door-open")
		if len(runs) == 1 {
			runID = runs[0].ID
		}
		return runID != ""
	})
	tr, err := h.eng.Trace(context.Background(), TraceRequest{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	because := ""
	for _, s := range tr.Trace.Steps {
		for _, d := range s.Decisions {
			because += d.Because
		}
	}
	due := regexp.MustCompile(`window held \(due \d{4}-\d\d-\d\d \d\d:\d\d:\d\d JST\)`)
	for _, tc := range []struct{ what, text string }{
		{"the trigger's decision", because},
		{"the narration", tr.Narration},
	} {
		if !due.MatchString(tc.text) || strings.Contains(tc.text, "Z)") {
			t.Errorf("%s: %q, want the due time in the house's zone (JST)", tc.what, tc.text)
		}
	}
}
