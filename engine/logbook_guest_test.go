package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestLogbookGuestCannotEvictTheOwnersLines: a guest principal of the
// configuration whose rule fires on every press and which switches its
// own rule off and on in a loop writes its lines past its part of the
// logbook: the owner's install and firing lines and the server's line
// stay (attacker rounds 17 and 18: 3 of the owner's 23 firing lines were
// left).
func TestLogbookGuestCannotEvictTheOwnersLines(t *testing.T) {
	h, ctx, gctx := guestLogbookHouse(t)
	const rule = `{"name": %q, "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": %q, "args": {"state": "TOGGLE"}}]}`
	h.deploy(fmt.Sprintf(rule, "owner-porch", "porch_light.set"))
	resp, err := h.eng.Execute(gctx, ExecuteRequest{Program: json.RawMessage(fmt.Sprintf(rule, "guest-loop", "hall_light.set"))})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("the guest's deploy: %+v, %v", resp, err)
	}
	want := []string{"rule: rule owner-porch installed (by owner)"}
	for i := range 3 {
		if err := h.sim.Press(context.Background(), "single"); err != nil {
			t.Fatal(err)
		}
		want = append(want, "firing: owner-porch fired: success")
		testutil.Eventually(t, 15*time.Second, fmt.Sprint(i+1, " firings of each rule in the logbook"), func() bool {
			return len(h.logbook(ctx, LogQuery{Rule: "owner-porch"}).Entries) == len(want) &&
				len(h.logbook(ctx, LogQuery{Rule: "guest-loop"}).Entries) == i+2
		})
	}
	for i := range 60 {
		for _, on := range []bool{false, true} {
			if _, err := h.eng.SetRuleEnabled(gctx, "guest-loop", on); err != nil {
				t.Fatalf("switch %d: %v", i, err)
			}
		}
	}
	slices.Reverse(want) // newest first
	if got := logTexts(h.logbook(ctx, LogQuery{Rule: "owner-porch"})); !slices.Equal(got, want) {
		t.Errorf("the owner's lines after the guest's flood: %q, want %q", got, want)
	}
	if got := logTexts(h.logbook(ctx, LogQuery{Kind: "server"})); len(got) != 1 {
		t.Errorf("the server's lines after the guest's flood: %q", got)
	}
	guestLines := h.logbook(ctx, LogQuery{Rule: "guest-loop"}).Entries
	if st := h.eng.LogbookStatus(); len(guestLines) == 0 || st.TrimmedGuest == 0 || st.TrimmedFirings != st.TrimmedGuest {
		t.Errorf("%d of the guest's lines kept; status %+v", len(guestLines), st)
	}
}

// guestLogbookHouse is a house of the owner and a guest who may deploy,
// with a logbook of 80 rows written every 20 ms, and each one's context.
func guestLogbookHouse(t *testing.T) (h *house, ctx, gctx context.Context) {
	t.Helper()
	guest := &Principal{Name: "guest", Deploy: true}
	h = newHouse(t, Config{Principals: []*Principal{Owner, guest}, Approval: noApproval,
		Logbook: LogbookConfig{MaxRows: 80, FlushEvery: 20 * time.Millisecond}})
	return h, WithPrincipal(context.Background(), Owner), WithPrincipal(context.Background(), guest)
}
