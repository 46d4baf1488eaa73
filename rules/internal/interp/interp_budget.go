package interp

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"fmt"
)

// entryOverhead is what a trace entry costs in a stored run besides its
// id, input, output and decisions: the outcome, the time, the JSON keys.
const entryOverhead = 64

// parentBytes is what an entry's parent costs: `,"parent":"<id>"`.
func parentBytes(parent string) int {
	if parent == "" {
		return 0
	}
	return len(parent) + len(`,"parent":""`)
}

// record charges what the run keeps of v (a trace entry's input or output,
// a call record's args or output) against MaxRunBytes: the stored envelope
// of a run is the trace and the outputs, so a loop that makes a 400 kB
// value 200 times must end before it has stored 80 MB.
func (r *interp) record(qid, what string, v any) *halt { return r.recordf(qid, v, what, "") }

// recordf is record with what made from a format and its argument only
// when it is needed (a halt's message).
func (r *interp) recordf(qid string, v any, format, arg string) *halt {
	rest := r.lim.MaxRunBytes - r.bytes
	s := core.Measure(v, rest, false)
	r.bytes += s.N
	if !s.Over(rest) {
		return nil
	}
	what := format
	if arg != "" {
		what = fmt.Sprintf(format, arg)
	}
	if s.Deep {
		return &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: %s is nested more than %d levels deep", qid, what, core.MaxMeasureDepth)}
	}
	return r.runBytesHalt(qid, what)
}

func (r *interp) runBytesHalt(qid, what string) *halt {
	return &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: %s would bring what this run records (trace and outputs) past %d bytes (MaxRunBytes)", qid, what, r.lim.MaxRunBytes)}
}

// chargeText charges a fixed part of the trace (an entry's id, a
// decision's reason); the next entry's begin reports going past the limit.
func (r *interp) chargeText(n int) { r.bytes += n }

// setValueFits bounds one value a set step stores: at most MaxValueBytes
// (its evaluation recorded it against MaxRunBytes: the step's output
// holds it). A variable of the top frame is held once more by the run's
// output, as it is when the run ends: it counts against MaxRunBytes for
// what it holds now, replacing what it held before.
func (r *interp) setValueFits(f *frame, qid, name string, v any) *halt {
	s := core.Measure(v, r.lim.MaxValueBytes, false)
	if s.Over(r.lim.MaxValueBytes) {
		return &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: the value of %q is more than %d bytes (MaxValueBytes)", qid, name, r.lim.MaxValueBytes)}
	}
	if f.depth > 0 {
		return nil // the call step's output holds the automation's vars
	}
	if r.varBytes == nil {
		r.varBytes = make(map[string]int, 4)
	}
	n := s.N + core.JsonStringLen(name) + 2
	r.bytes += n - r.varBytes[name]
	r.varBytes[name] = n
	if r.bytes > r.lim.MaxRunBytes {
		return r.runBytesHalt(qid, fmt.Sprintf("keeping %q in the run's output", name))
	}
	return nil
}

// keepCall appends the record of a call the World was asked to make. The
// record holds the arguments a second time (the trace entry's input holds
// them too) and the output twice with the entry's: both count against
// MaxRunBytes, and when they would pass it the record keeps only which
// call was made, when (the halt says why the rest is missing).
func (r *interp) keepCall(qid string, rec CallRecord) *halt {
	h := r.record(qid, "the call's record", rec.Args)
	for k := 0; k < 2 && h == nil && rec.Output != nil; k++ {
		h = r.record(qid, "the call's output", rec.Output)
	}
	if h != nil {
		rec.Args, rec.Output = nil, nil
	}
	r.calls = append(r.calls, rec)
	return h
}
