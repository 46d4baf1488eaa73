package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/admission"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// TestTestRunSlotsKeepRoomForAdmins: guests (principals who are not
// administrators) together take at most 3 of the 4 test-run slots, so
// the owner's test run is admitted while two guests each hold all they
// may (attacker round 20: the owner's was refused at once), and a guest
// beyond is refused.
func TestTestRunSlotsKeepRoomForAdmins(t *testing.T) {
	lim, prog := cpuBoundProgram()
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true, Admin: true}
	g1 := &Principal{Name: "g1", TokenHash: HashToken("g1")}
	g2 := &Principal{Name: "g2", TokenHash: HashToken("g2")}
	g3 := &Principal{Name: "g3", TokenHash: HashToken("g3")}
	h := newHouse(t, Config{Limits: lim, Principals: []*Principal{owner, g1, g2, g3}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{}, 4)
	for _, g := range []*Principal{g1, g1, g2} {
		go func() {
			_, _ = h.eng.Execute(WithPrincipal(ctx, g), ExecuteRequest{Program: json.RawMessage(prog), TestRun: true, Store: new(bool)})
			done <- struct{}{}
		}()
	}
	testutil.Eventually(t, 10*time.Second, "the guests' test runs in flight", func() bool {
		return h.eng.admit.InFlight("g1") == admission.MaxPerPrincipal && h.eng.admit.InFlight("g2") == 1
	})
	quick := json.RawMessage(`{"name":"quick","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"x":1}}]}`)
	cases := []struct {
		who  *Principal
		want bool // admitted
	}{
		{g3, false}, // the guests hold their 3
		{owner, true},
	}
	for _, c := range cases {
		r, err := h.eng.Execute(WithPrincipal(context.Background(), c.who), ExecuteRequest{Program: quick, TestRun: true, Store: new(bool)})
		var re *pilotage.RequestError
		refused := errors.As(err, &re) && re.Kind == pilotage.ErrResourceExhausted
		switch {
		case c.want && (err != nil || !r.Outcome.OK):
			t.Errorf("%s's test run while guests hold their slots: %+v %v, want it run", c.who.Name, r, err)
		case !c.want && !refused:
			t.Errorf("%s's test run while guests hold 3 slots: %+v %v, want resource_exhausted", c.who.Name, r, err)
		}
	}
	cancel()
	for range 3 {
		<-done
	}
}

// TestAnswersWithoutRoom: with limits.max_served_run_bytes all in use, a
// test run's answer is refused (resource_exhausted, naming the run to read
// when it was stored) and a deploy's goes out, its outcome standing, with
// its trace cut to the summary.
func TestAnswersWithoutRoom(t *testing.T) {
	h := newHouse(t, Config{})
	var held []func()
	for range 2 { // each hold is charged half of the gate
		r, _ := h.eng.served.Hold(context.Background(), h.eng.served.Max(), false)
		if r == nil {
			t.Fatal("filling the gate")
		}
		held = append(held, r)
	}
	defer func() {
		for _, r := range held {
			r()
		}
	}()
	prog := json.RawMessage(`{"name":"full","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"x":1}}]}`)
	cases := []struct {
		name string
		req  ExecuteRequest
	}{
		{"test run", ExecuteRequest{Program: prog, TestRun: true}},
		{"deploy", ExecuteRequest{Program: prog}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := h.eng.Execute(context.Background(), c.req)
			var re *pilotage.RequestError
			switch {
			case c.req.TestRun && (!errors.As(err, &re) || re.Kind != pilotage.ErrResourceExhausted || !strings.Contains(re.Message, "pilotage_trace")):
				t.Errorf("a test run's answer without room: %+v %v, want resource_exhausted naming pilotage_trace", r, err)
			case !c.req.TestRun && (err != nil || !r.Outcome.OK || r.Trace == nil || r.Trace.Level != pilotage.LevelSummary):
				t.Errorf("a deploy's answer without room: %+v %v, want it installed with a summary trace", r, err)
			}
		})
	}
}
