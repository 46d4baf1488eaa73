package recorder

import (
	"encoding/json"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Envelope is what a stored run keeps: the facts that rode the response,
// with the trace at the recorded (full) level.
type Envelope struct {
	RunID   string           `json:"run_id"`
	Outcome pilotage.Outcome `json:"outcome"`
	Output  any              `json:"output,omitempty"`
	Trace   *pilotage.Trace  `json:"trace,omitempty"`
}

// NewFiringRecord is the record of a firing that ended with out (or is
// running): its run row, its trace of steps and, when res is not nil, its
// output. mayEnd: the firing does not wait, so a finished one is final.
func NewFiringRecord(run storage.Run, out pilotage.Outcome, res *rules.RunResult, steps []pilotage.TraceStep, mayEnd bool) *FiringRecord {
	if steps == nil {
		steps = []pilotage.TraceStep{}
	}
	fr := &FiringRecord{}
	fr.trace = pilotage.Trace{Level: pilotage.LevelFull, Steps: steps}
	fr.Env = Envelope{RunID: run.ID, Outcome: out, Trace: &fr.trace}
	if res != nil {
		calls := res.Calls
		if calls == nil {
			calls = []rules.CallRecord{}
		}
		fr.out = firingOutput{calls: calls, vars: res.Vars}
		fr.Env.Output = &fr.out
	}
	running := out.Status == rules.StatusRunning
	fr.Item = Item{Run: run, Env: &fr.Env, Announce: !running, Final: mayEnd && !running, Owned: true}
	return fr
}

// FiringRecord is what a firing hands the recorder, in one allocation.
type FiringRecord struct {
	Item  Item
	Env   Envelope
	trace pilotage.Trace
	out   firingOutput
}

// firingOutput is the output of a firing that ended ok: {"calls": [...],
// "vars": {...}} (vars {} when the run set none). It encodes as that map
// would, through encoding/json and appendOutput alike.
type firingOutput struct {
	calls []rules.CallRecord // not nil
	vars  map[string]any
}

func (o *firingOutput) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"calls": o.calls, "vars": orEmptyMap(o.vars)})
}

// orEmptyMap is m, or an empty map for nil (vars {} when the run set none).
func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
