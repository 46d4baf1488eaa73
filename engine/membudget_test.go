package engine

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/rules"
)

// TestTestRunByteBudget runs issue 14's two programs as test runs through
// the engine (validation, SimWorld, recorder, SQLite): a string doubling in
// a loop reached 9 GB, and 200 iterations of a 400 kB repeat stored an 80
// MB run envelope. Both must end limit_exceeded naming the limit and the
// step, allocate a bounded amount, and store a bounded envelope.
func TestTestRunByteBudget(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	tests := []struct{ name, program, step, limit string }{
		{"doubling", `{"name":"dbl","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"v":"x"}},{"id":"r","repeat":{"count":40},"do":[{"id":"d","set":{"v":"{{ vars.v + vars.v }}"}}]}]}`, `"d#20"`, "MaxValueBytes"},
		{"large repeats", `{"name":"rep","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"r","repeat":{"count":200},"do":[{"id":"d","set":{"v":"{{ repeat('x', 400000) }}"}}]}]}`, `"d#`, "MaxRunBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r := h.execute(ExecuteRequest{Program: json.RawMessage(tt.program), TestRun: true})
			h.eng.Flush()
			runtime.ReadMemStats(&after)
			if r.Outcome.Status != rules.StatusLimitExceeded || !strings.Contains(r.Outcome.Error, tt.step) || !strings.Contains(r.Outcome.Error, tt.limit) {
				t.Fatalf("outcome %+v, want limit_exceeded naming step %s and %s", r.Outcome, tt.step, tt.limit)
			}
			if r.Trace == nil || len(r.Trace.Steps) == 0 || r.Trace.Steps[len(r.Trace.Steps)-1].Outcome.Status != rules.StepLimitExceeded {
				t.Errorf("no partial trace ending at the step past the limit")
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Errorf("the test run allocated %d MB", alloc>>20)
			}
			run, err := h.store.GetRun(ctx, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if max := 3 * rules.DefaultLimits.MaxRunBytes; len(run.Envelope) > max {
				t.Errorf("stored envelope is %d bytes, want at most %d", len(run.Envelope), max)
			}
			t.Logf("%s; envelope %d kB", r.Outcome.Error, len(run.Envelope)>>10)
		})
	}
}
