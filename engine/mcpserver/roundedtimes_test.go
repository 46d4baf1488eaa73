package mcpserver_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestTraceDurationsAreRounded: a wait step's waited_ms read
// "130.180124" and every t_ms had nanoseconds (MCP, the web's JSON and
// the CLI print what the server answers): a fetched trace has waited_ms in
// whole milliseconds and t_ms to the microsecond.
func TestTraceDurationsAreRounded(t *testing.T) {
	s, c := ownerStack(t)
	deployed(t, c, `{"name":"waits","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],
	  "steps":[{"id":"pause","delay":"20ms"},{"id":"hold","wait":{"expr":"false"},"timeout":"30ms","continue_on_timeout":true},
	           {"id":"on","call":"living_plug.set","args":{"state":"ON"}}]}`)
	for _, occ := range []bool{false, true} {
		if err := s.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": occ}); err != nil {
			t.Fatal(err)
		}
	}
	var tr map[string]any
	testutil.Eventually(t, 10*time.Second, "the finished firing", func() bool {
		ids := firingsOf(t, c, "waits")
		if len(ids) == 0 || !traceOK(t, c, ids[0]) {
			return false
		}
		tr = call(t, c, "pilotage_trace", map[string]any{"run_id": ids[0]})
		return status(tr) == "success"
	})
	waited, _ := step(tr["trace"], "hold")["output"].(map[string]any)["waited_ms"].(float64)
	if waited < 30 || waited != math.Round(waited) {
		t.Errorf("waited_ms %v, want whole milliseconds, at least the 30 ms timeout: %s", waited, js(tr))
	}
	for _, id := range []string{"triggers", "pause", "hold", "on"} {
		tms, ok := step(tr["trace"], id)["t_ms"].(float64)
		if us := tms * 1000; !ok || math.Abs(us-math.Round(us)) > 1e-6 {
			t.Errorf("step %s: t_ms %v, want it to the microsecond", id, tms)
		}
	}
}
