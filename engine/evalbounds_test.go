package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/admission"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// TestTestRunRealTimeBound: a test run's World clock is virtual, so
// MaxWall never bounded its real time. A loop of evaluations each under
// MaxEvalOps (a thousand of ~20 ms) ends with timeout at MaxTestRunWall,
// saying so.
func TestTestRunRealTimeBound(t *testing.T) {
	lim := rules.DefaultLimits
	lim.MaxTestRunWall = 300 * time.Millisecond
	lim.MaxRunOps = 1 << 62
	h := newHouse(t, Config{Limits: lim})
	prog := `{"name":"slow","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"l":"{{ 1..300 }}"}},` +
		`{"id":"r","repeat":{"count":1000},"do":[{"id":"d","set":{"v":"{{ sum(vars.l, sum(vars.l, #)) }}"}}]}]}`
	start := time.Now()
	r := h.execute(ExecuteRequest{Program: json.RawMessage(prog), TestRun: true})
	took := time.Since(start)
	if r.Outcome.Status != rules.StatusTimeout || !strings.Contains(r.Outcome.Error, "MaxTestRunWall") {
		t.Fatalf("outcome %+v", r.Outcome)
	}
	if took > 5*time.Second {
		t.Errorf("the test run took %v", took)
	}
	t.Logf("%s after %v", r.Outcome.Error, took)
}

// cpuBoundHouse is a house without an evaluation bound, and a program
// whose test run keeps a core busy far longer than any test waits.
func cpuBoundHouse(t *testing.T) (*house, string) {
	lim, prog := cpuBoundProgram()
	return newHouse(t, Config{Limits: lim}), prog
}

// cpuBoundProgram is cpuBoundHouse's program and the limits it runs
// unbounded under (but for its request's context).
func cpuBoundProgram() (rules.Limits, string) {
	lim := rules.DefaultLimits
	lim.MaxEvalOps, lim.MaxRunOps = 1<<62, 1<<62
	return lim, `{"name":"cpu","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"l":"{{ 1..300 }}"}},` +
		`{"id":"d","set":{"v":"{{ sum(vars.l, sum(vars.l, sum(vars.l, sum(vars.l, sum(vars.l, #))))) }}"}}]}`
}

// TestTestRunStopsWithItsRequest: the evaluation under way stops when the
// request's context ends (a client that went away used to leave a core
// burning for as long as the expression ran: 7e14 additions).
func TestTestRunStopsWithItsRequest(t *testing.T) {
	h, prog := cpuBoundHouse(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *ExecuteResponse, 1)
	go func() {
		r, _ := h.eng.Execute(ctx, ExecuteRequest{Program: json.RawMessage(prog), TestRun: true})
		done <- r
	}()
	time.Sleep(300 * time.Millisecond) // well into step d
	cpu := cpuTime(t)
	cancel()
	cancelled := time.Now()
	select {
	case r := <-done:
		// CPU, not wall time: on a busy machine the scheduler adds its own.
		if used := cpuTime(t) - cpu; used > 100*time.Millisecond {
			t.Errorf("the test run used %v of CPU after its request was cancelled (%v)", used, time.Since(cancelled))
		}
		if r != nil && r.Outcome.Status != rules.StatusCancelled {
			t.Errorf("outcome %+v", r.Outcome)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the test run did not stop with its request")
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestStoredEnvelopeIsBounded: strings of control characters are six
// times their length once encoded; the stored envelope of a run bounded at
// MaxRunBytes was 24 MB. It is now MaxRunBytes and a few kB at most.
func TestStoredEnvelopeIsBounded(t *testing.T) {
	h := newHouse(t, Config{})
	for _, prog := range []string{
		`{"name":"esc","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"r","repeat":{"count":10},"do":[{"id":"d","set":{"v":"{{ repeat('\u0001', 150000) }}"}}]}]}`,
		`{"name":"esc","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"r","repeat":{"count":10},"do":[{"id":"d","set":{"v":"{{ repeat('<\"', 100000) }}"}}]}]}`,
		`{"name":"out","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"a":"{{ repeat('x', 1000000) }}"}},{"id":"b","set":{"b":"{{ repeat('x', 1000000) }}"}},{"id":"c","call":"notify.phone","args":{"message":"{{ repeat('x', 600000) }}"}}]}`,
	} {
		r := h.execute(ExecuteRequest{Program: json.RawMessage(prog), TestRun: true})
		h.eng.Flush()
		run, err := h.store.GetRun(context.Background(), r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if max := rules.DefaultLimits.MaxRunBytes + 64<<10; len(run.Envelope) > max {
			t.Errorf("%s: stored envelope is %d bytes, want at most %d", r.Outcome.Status, len(run.Envelope), max)
		}
		t.Logf("%s %s: envelope %d kB", r.Outcome.Status, r.Outcome.Error, len(run.Envelope)>>10)
	}
}

// TestTestRunsInFlightBounded: a test run may burn its whole real-time
// bound; an attacker round ran 40 at once as a guest and /healthz,
// lookups and firings waited seconds. Beyond admission.MaxPerPrincipal in
// flight a test run is refused at once (resource_exhausted) and nothing
// runs; once one ends the next runs.
func TestTestRunsInFlightBounded(t *testing.T) {
	h, prog := cpuBoundHouse(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, admission.MaxPerPrincipal)
	for range admission.MaxPerPrincipal {
		go func() {
			_, _ = h.eng.Execute(ctx, ExecuteRequest{Program: json.RawMessage(prog), TestRun: true})
			done <- struct{}{}
		}()
	}
	testutil.Eventually(t, 10*time.Second, "the test runs in flight", func() bool {
		return h.eng.admit.InFlight("owner") == admission.MaxPerPrincipal
	})
	_, err := h.eng.Execute(context.Background(), ExecuteRequest{Program: json.RawMessage(prog), TestRun: true})
	var re *pilotage.RequestError
	if !errors.As(err, &re) || re.Kind != pilotage.ErrResourceExhausted {
		t.Fatalf("a test run beyond the bound: %v, want resource_exhausted", err)
	}
	cancel()
	for range admission.MaxPerPrincipal {
		<-done
	}
	quick := `{"name":"quick","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"x":1}}]}`
	if r := h.execute(ExecuteRequest{Program: json.RawMessage(quick), TestRun: true}); !r.Outcome.OK {
		t.Fatalf("a test run after the others ended: %+v", r.Outcome)
	}
}
