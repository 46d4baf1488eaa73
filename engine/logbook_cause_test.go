package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// guestHelperHouse is guestLogbookHouse with helpers defs served.
func guestHelperHouse(t *testing.T, defs ...helpers.Def) (h *house, ctx, gctx context.Context) {
	t.Helper()
	h, ctx, gctx = guestLogbookHouse(t)
	hm := helpers.New(helpers.Options{Catalog: h.devs, Store: h.store, Log: quiet(), Note: h.eng.HelperNote})
	if err := hm.Start(context.Background(), defs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hm.Close)
	return h, ctx, gctx
}

// TestLogbookGuestDrivenFiringsKeepTheOwnersRuleChanges: a guest's rule
// toggling a helper in a loop fires the owner's rule watching it each
// time (attacker round 20: its firings filled the owner's part and
// evicted "rule owner-plug installed (by owner)"). Rule changes keep a
// share firings cannot evict: the owner's install line stays.
func TestLogbookGuestDrivenFiringsKeepTheOwnersRuleChanges(t *testing.T) {
	h, ctx, gctx := guestHelperHouse(t, helpers.Def{ID: "vacation_mode", Kind: helpers.Flag})
	h.deploy(`{"name": "owner-vac", "mode": "parallel", "triggers": [{"id": "v", "state": "vacation_mode.state"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`)
	resp, err := h.eng.Execute(gctx, ExecuteRequest{Program: json.RawMessage(`{"name": "g-helper-flood",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "loop", "repeat": {"count": 30}, "do": [{"id": "t", "call": "vacation_mode.toggle"}]}]}`)})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("the guest's deploy: %+v, %v", resp, err)
	}
	// 80 rows: the owner's part of the firings is 10; two presses fire
	// the owner's rule up to 60 times.
	for i := range 2 {
		if err := h.sim.Press(context.Background(), "single"); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 15*time.Second, fmt.Sprint(i+1, " runs of the guest's rule"), func() bool {
			runs, err := h.eng.ListRuns(gctx, RunFilter{Rule: "g-helper-flood", Kind: KindFiring})
			return err == nil && len(runs) == i+1 && runs[0].OK
		})
	}
	testutil.Eventually(t, 15*time.Second, "the owner's firings past its part trimmed", func() bool {
		h.eng.FlushLogbook()
		st := h.eng.LogbookStatus()
		return st.TrimmedFirings-st.TrimmedGuest >= 10
	})
	want := "rule: rule owner-vac installed (by owner)"
	if got := logTexts(h.logbook(ctx, LogQuery{Rule: "owner-vac"})); !slices.Contains(got, want) {
		t.Errorf("the owner's lines after the guest-driven firings: %q, want %q among them", got, want)
	}
	if got := logTexts(h.logbook(ctx, LogQuery{Rule: "g-helper-flood", Kind: "rule"})); len(got) != 1 {
		t.Errorf("the guest's rule changes: %q, want its install", got)
	}
}

// TestLogbookGuestTimersFinishIsTheGuests: a timer a guest's rule started
// ends with a line filed as the guest's and its rule's (attacker round
// 20: it went to the devices' share with no principal).
func TestLogbookGuestTimersFinishIsTheGuests(t *testing.T) {
	h, ctx, gctx := guestHelperHouse(t, helpers.Def{ID: "kitchen_timer", Kind: helpers.Timer, Duration: "PT1H"})
	resp, err := h.eng.Execute(gctx, ExecuteRequest{Program: json.RawMessage(`{"name": "g-timer",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "t", "call": "kitchen_timer.start", "args": {"duration": "PT1S"}}]}`)})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("the guest's deploy: %+v, %v", resp, err)
	}
	if err := h.sim.Press(context.Background(), "single"); err != nil {
		t.Fatal(err)
	}
	var finish LogEntry
	testutil.Eventually(t, 15*time.Second, "the timer's finish in the logbook", func() bool {
		for _, en := range h.logbook(ctx, LogQuery{Kind: "helper"}).Entries {
			if strings.Contains(en.Text, "its time was up") {
				finish = en
				return true
			}
		}
		return false
	})
	if who, _ := finish.Concerns(); who != "guest" || finish.Rule != "g-timer" {
		t.Errorf("the finish line %q is %q's, of rule %q; want the guest's rule's", finish.Text, who, finish.Rule)
	}
	if got := h.logbook(gctx, LogQuery{Rule: "g-timer", Kind: "helper"}).Entries; len(got) != 2 {
		t.Errorf("the guest sees %q of its timer, want its start and finish", logTexts(LogPage{Entries: got}))
	}
}
