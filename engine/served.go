package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pilothouse/pilothouse/engine/internal/served"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// ServedStats are the served-run bound's counters, for /healthz.
type ServedStats = served.Stats

// ServingRuns returns a context under which the stored runs read (Trace)
// and the answers built (Execute) stay counted against
// limits.MaxServedRunBytes until done is called: call it once the
// response is written, so the bound covers the encoding too.
func ServingRuns(ctx context.Context) (_ context.Context, done func()) {
	return served.ServingRuns(ctx)
}

// ServedStats returns the served-run bound's counters.
func (e *Engine) ServedStats() ServedStats { return e.served.Stats() }

// readCost is what serving a stored run allocates per byte of its record,
// at most: read from SQLite, decoded, encoded twice in the MCP answer (its
// text and structured copies) with the encoders' buffer growth
// (TestTraceReadsAreChargedWhatTheyCost measures it), so that
// limits.max_served_run_bytes bounds memory rather than stored bytes.
const readCost = 16

// answerCost is what an execute answer costs per byte of its JSON until
// it is written, at most: the answer itself, encoded in the MCP answer
// (its text and structured copies, then the JSON-RPC message) with the
// encoders' buffer growth. TestAnswersAreChargedWhatTheyCost measures
// it: serving a 2.6 MB answer allocated 12 times its JSON beyond the run
// once a trace's durations were rounded in a copy for readers, up to 15
// times under the race detector.
const answerCost = 20

// holdServed takes room for run id's record before it is read (its size
// is read first, scoped to p like the record itself); release gives it
// back, or is a no-op when ctx defers it to ServingRuns' done. A run that
// does not exist (for p) takes nothing: the caller's read says not found.
func (e *Engine) holdServed(ctx context.Context, p *Principal, id string) (release func(), err error) {
	if e.store == nil {
		return func() {}, nil
	}
	owner := p.Name
	if p.Admin {
		owner = ""
	}
	size, err := e.store.RunSize(ctx, id, owner)
	if errors.Is(err, storage.ErrNotFound) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: reading run: %w", err)
	}
	return e.charge(ctx, p, "stored run "+id, size, readCost)
}

// holdAnswer takes room for an execute answer once it is built, until it
// is written (see ServingRuns): nil when none came within the wait. An
// answer that does not encode is charged what encoded before the fault
// (the transport says it could not be encoded).
func (e *Engine) holdAnswer(ctx context.Context, p *Principal, resp *ExecuteResponse) (release func(), err error) {
	var n counter
	_ = json.NewEncoder(&n).Encode(resp)
	return e.charge(ctx, p, "answer of run "+resp.RunID, n.n, answerCost)
}

// counter counts the bytes written to it.
type counter struct{ n int64 }

func (c *counter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// charge is the one place serving is charged against
// limits.max_served_run_bytes: size bytes (a stored record, an answer's
// JSON) at perByte each, what serving them may allocate. what names it
// in the log.
func (e *Engine) charge(ctx context.Context, p *Principal, what string, size, perByte int64) (release func(), err error) {
	cost := size * perByte
	release, refused := e.served.Hold(ctx, cost, !p.Admin)
	if release != nil {
		return release, nil
	}
	if refused == 1 || refused%100 == 0 {
		e.log.Warn("refused to serve: limits.max_served_run_bytes are in use by other reads and answers", "what", what,
			"bytes", size, "cost", cost, "limit", e.served.Max(), "refused", refused)
	}
	return nil, pilotage.Errorf(pilotage.ErrResourceExhausted, fmt.Sprintf(
		"the server is busy serving other stored runs and answers (%d bytes of memory at once at most, limits.max_served_run_bytes; this one is %d bytes, %d to serve): try again in a few seconds",
		e.served.Max(), size, cost))
}
