package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestLogbookGuestHelperFloodKeepsTheDevicesLines: a guest's rule that
// toggles a helper in a repeat on every press (attacker round 19: 500
// toggles a firing evicted every device line in 25 s) has its helper
// lines filed as its own, with the rule's name, and trimmed in the
// guest's part: the bus's event lines and a helper's change no rule made
// stay.
func TestLogbookGuestHelperFloodKeepsTheDevicesLines(t *testing.T) {
	h, ctx, gctx := guestLogbookHouse(t)
	hm := helpers.New(helpers.Options{Catalog: h.devs, Store: h.store, Log: quiet(), Note: h.eng.HelperNote})
	if err := hm.Start(context.Background(), []helpers.Def{{ID: "away", Kind: helpers.Flag}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hm.Close)
	if err := hm.Act(context.Background(), "away.turn_on", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "the change by no rule in the logbook", func() bool {
		return len(h.logbook(ctx, LogQuery{Kind: "helper"}).Entries) == 1
	})
	resp, err := h.eng.Execute(gctx, ExecuteRequest{Program: json.RawMessage(`{"name": "guest-flood",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "loop", "repeat": {"count": 30}, "do": [{"id": "t", "call": "away.toggle"}]}]}`)})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("the guest's deploy: %+v, %v", resp, err)
	}
	const presses = 4
	for i := range presses {
		if err := h.sim.Press(context.Background(), "single"); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 15*time.Second, fmt.Sprint(i+1, " runs of the guest's rule"), func() bool {
			runs, err := h.eng.ListRuns(ctx, RunFilter{Rule: "guest-flood", Kind: KindFiring})
			return err == nil && len(runs) == i+1 && runs[0].OK
		})
	}
	// Each press: its event line, 30 helper lines and the firing's; then
	// the change by no rule and the guest's install.
	testutil.Eventually(t, 15*time.Second, "every line written", func() bool {
		st := h.eng.LogbookStatus()
		return st.Written+st.Dropped >= presses*(1+30+1)+2
	})
	if got := h.logbook(ctx, LogQuery{Kind: "event"}).Entries; len(got) < presses {
		t.Errorf("the bus's event lines after the guest's helper flood: %d, want %d presses", len(got), presses)
	}
	mine := 0
	for _, en := range h.logbook(ctx, LogQuery{Kind: "helper"}).Entries {
		if en.Rule == "" {
			mine++
		} else if en.Rule != "guest-flood" {
			t.Errorf("a helper line of rule %q", en.Rule)
		}
	}
	if mine != 1 {
		t.Errorf("the helper's change by no rule: %d lines kept, want 1", mine)
	}
	guestLines := len(h.logbook(ctx, LogQuery{Rule: "guest-flood"}).Entries)
	if st := h.eng.LogbookStatus(); guestLines == 0 || guestLines > 10 || st.TrimmedGuest == 0 || st.TrimmedBus != 0 {
		t.Errorf("%d of the guest's lines kept; status %+v", guestLines, st)
	}
}
