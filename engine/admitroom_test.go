package engine

import (
	"context"
	"encoding/json"
	"errors"
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
