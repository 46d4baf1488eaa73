package rules

import "fmt"

// entryOverhead is what a trace entry costs in a stored run besides its
// id, input, output and decisions: the outcome, the time, the JSON keys.
const entryOverhead = 64

// record charges what the run keeps of v (a trace entry's input or output,
// a call record's args or output) against MaxRunBytes: the stored envelope
// of a run is the trace and the outputs, so a loop that makes a 400 kB
// value 200 times must end before it has stored 80 MB.
func (r *interp) record(qid, what string, v any) *halt {
	rest := r.lim.MaxRunBytes - r.bytes
	s := measure(v, rest, false)
	r.bytes += s.n
	if s.deep {
		return &halt{StatusLimitExceeded, fmt.Sprintf("step %q: %s is nested more than %d levels deep", qid, what, maxMeasureDepth)}
	}
	if s.n > rest {
		return r.runBytesHalt(qid, what)
	}
	return nil
}

func (r *interp) runBytesHalt(qid, what string) *halt {
	return &halt{StatusLimitExceeded, fmt.Sprintf("step %q: %s would bring what this run records (trace and outputs) past %d bytes (MaxRunBytes)", qid, what, r.lim.MaxRunBytes)}
}

// chargeText charges a fixed part of the trace (an entry's id, a
// decision's reason); the next entry's begin reports going past the limit.
func (r *interp) chargeText(n int) { r.bytes += n }

// setValueFits bounds one value a set step stores: at most MaxValueBytes
// (an object template can join several values that each fit), and
// recorded against MaxRunBytes (the step's output holds it).
func (r *interp) setValueFits(qid, name string, v any) *halt {
	if s := measure(v, r.lim.MaxValueBytes, false); s.n > r.lim.MaxValueBytes {
		return &halt{StatusLimitExceeded, fmt.Sprintf("step %q: the value of %q is more than %d bytes (MaxValueBytes)", qid, name, r.lim.MaxValueBytes)}
	}
	return r.record(qid, fmt.Sprintf("setting %q", name), v)
}
