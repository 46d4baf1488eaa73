package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

func logTexts(p LogPage) []string {
	var out []string
	for _, e := range p.Entries {
		out = append(out, e.Kind+": "+e.Text)
	}
	return out
}

func (h *house) logbook(ctx context.Context, q LogQuery) LogPage {
	h.t.Helper()
	h.eng.FlushLogbook()
	p, err := h.eng.Logbook(ctx, q)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// TestLogbookRecordsTheHouse: a remote press, an availability change, a
// deploy and its firing, and the server's start and stop are entries,
// filtered by device, rule and kind, scoped by principal, told live, and
// kept over a restart.
func TestLogbookRecordsTheHouse(t *testing.T) {
	guest := &Principal{Name: "guest", Scope: Scope{DenyDevices: []string{"bedroom_remote"}}}
	h := newHouse(t, Config{Principals: []*Principal{Owner, guest}, Approval: noApproval})
	live, cancel := h.eng.WatchLogbook(64)
	defer cancel()
	h.deploy(`{"name": "press-porch", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "TOGGLE"}}]}`)
	if err := h.sim.Press(context.Background(), "single"); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Publish(context.Background(), "zigbee2mqtt/hall_motion/availability", []byte(`{"state":"offline"}`), 1, true); err != nil {
		t.Fatal(err)
	}
	want := []string{"event: bedroom_remote.action: toggle", "availability: hall_motion went offline",
		"firing: press-porch fired: success", "rule: rule press-porch installed (by owner)", "server: Pilothouse started: 0 rules armed"}
	ctx := WithPrincipal(context.Background(), Owner)
	testutil.Eventually(t, 10*time.Second, "the logbook's entries", func() bool {
		got := logTexts(h.logbook(ctx, LogQuery{}))
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
	seen := map[string]bool{}
	for len(seen) < 3 {
		select {
		case en := <-live:
			seen[en.Kind] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("live entries: %v", seen)
		}
	}
	for _, tc := range []struct {
		name string
		q    LogQuery
		want string
	}{
		{"device", LogQuery{Device: "bedroom_remote"}, `[event: bedroom_remote.action: toggle]`},
		{"area of the device", LogQuery{Area: "hall", Kind: "availability"}, `[availability: hall_motion went offline]`},
		{"rule", LogQuery{Rule: "press-porch"}, `[firing: press-porch fired: success rule: rule press-porch installed (by owner)]`},
		{"kind", LogQuery{Kind: "server"}, `[server: Pilothouse started: 0 rules armed]`},
	} {
		if got := logTexts(h.logbook(ctx, tc.q)); "["+strings.Join(got, " ")+"]" != tc.want {
			t.Errorf("%s: %q, want %s", tc.name, got, tc.want)
		}
	}
	// The guest sees neither the remote nor the owner's rule and firing.
	for _, g := range logTexts(h.logbook(WithPrincipal(context.Background(), guest), LogQuery{})) {
		if strings.Contains(g, "bedroom_remote") || strings.Contains(g, "press-porch") {
			t.Errorf("guest sees %q", g)
		}
	}
	// Paging: one entry a page walks the whole logbook, newest first.
	all := h.logbook(ctx, LogQuery{})
	var walked []string
	for q := (LogQuery{Limit: 1}); ; {
		p := h.logbook(ctx, q)
		walked = append(walked, logTexts(p)...)
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	if !slices.Equal(walked, logTexts(all)) {
		t.Errorf("paged %q, want %q", walked, logTexts(all))
	}
	if _, err := h.eng.Logbook(ctx, LogQuery{Cursor: "nonsense"}); err == nil {
		t.Error("a bad cursor is accepted")
	}
	h.stop()
	h.start()
	got := logTexts(h.logbook(ctx, LogQuery{Kind: "server"}))
	if strings.Join(got, "|") != "server: Pilothouse started: 1 rules armed|server: Pilothouse stopped|server: Pilothouse started: 0 rules armed" {
		t.Fatalf("after a restart: %q", got)
	}
	if st := h.eng.LogbookStatus(); st.Dropped != 0 || st.Failed != 0 || st.Written == 0 {
		t.Errorf("status %+v", st)
	}
}

// TestLogbookSaysWhoChangedARule: a rule change's entry names who made
// it, and whose rule it was when that was someone else (it read "(owner
// guest)" for a guest's install, as if the owner had done it).
func TestLogbookSaysWhoChangedARule(t *testing.T) {
	guest := &Principal{Name: "guest", Deploy: true}
	h := newHouse(t, Config{Principals: []*Principal{Owner, guest}, Approval: noApproval})
	gctx := WithPrincipal(context.Background(), guest)
	resp, err := h.eng.Execute(gctx, ExecuteRequest{Program: []byte(`{"name": "guest-porch", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "TOGGLE"}}]}`)})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("guest deploy: %v %+v", err, resp)
	}
	octx := WithPrincipal(context.Background(), Owner)
	if _, err := h.eng.RemoveRule(octx, "guest-porch"); err != nil {
		t.Fatal(err)
	}
	want := `[rule: rule guest-porch removed (by owner, a rule of guest) rule: rule guest-porch installed (by guest)]`
	testutil.Eventually(t, 10*time.Second, "the rule's entries", func() bool {
		return "["+strings.Join(logTexts(h.logbook(octx, LogQuery{Rule: "guest-porch"})), " ")+"]" == want
	})
}
