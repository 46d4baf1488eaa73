package recorder

import (
	"cmp"
	"container/heap"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/background"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// The recorder goroutine's batch: each run it takes is held as its JSON
// envelope (encoded here, byte for byte as json.Marshal would), the
// retention policy supersedes what it would trim, and write stores the
// batch in one transaction.

// batchWriter is the recorder's writing side: one batch at a time, on the
// recorder's goroutine. As runs arrive it encodes their envelopes (a held
// run is its JSON, about 700 bytes, not the firing's objects, about four
// times that) and applies the retention policy: of a rule's final firings
// of one status it holds the newest keep, and an older one is superseded
// as soon as a newer one arrives past keep (its record is released at
// once). So a busy batch holds at most keep firings per rule and status.
type batchWriter struct {
	r     *Recorder
	fifo  []*Item           // runs that are never superseded
	tails map[tailKey]*tail // final firings by rule and status
	// arrived counts the final firings of each rule and status pushed
	// into this batch (nextLinger).
	arrived map[tailKey]int
	held    int    // runs held (fifo and tails)
	bytes   int64  // the pushed runs' Bytes, given back once written
	n       int    // runs pushed into this batch
	seq     uint64 // queue order of the pushed runs
	// superseded lists the rules that had firings superseded in this
	// batch: their stored firings are trimmed with it.
	superseded map[string]bool
	rows       []storage.Run // the rows written
	kept       []*Item       // their items, in queue order
	scratch    []byte        // where envelopes are encoded before their exact copy
	// Trimming is a separate statement per rule: done at most once per
	// trimEvery, for the rules that stored at least keep runs since, and
	// at once for a rule that stored hotTrim × keep runs since (a rule
	// firing thousands of times a second is trimmed by a few hundred rows
	// per batch, not tens of thousands in one statement every trimEvery),
	// or that had firings superseded in this batch.
	trimCount map[string]int
	lastTrim  time.Time
	// bytes written since the rule's and the principal's last trim
	// (trim.go).
	ruleBytes, principalBytes map[string]int64
	tailBytes                 map[tailKey]int64 // bytes held in each tail
	slice0                    time.Time         // start of the current slice of work (pace)
	yield                     background.Yielder
	urgent                    bool // a flush waits: no pauses (pace)
	paced                     bool // a busy batch: pauses between slices of work (pace)
}

type tailKey struct{ rule, status string }

const (
	trimEvery  = 5 * time.Second
	hotTrim    = 4
	scratchMax = 64 << 10 // a bigger scratch buffer is not kept
	paceSlice  = 2 * time.Millisecond
	paceMax    = 8 * time.Millisecond
)

func newBatchWriter(r *Recorder) *batchWriter {
	return &batchWriter{r: r, tails: map[tailKey]*tail{}, arrived: map[tailKey]int{}, superseded: map[string]bool{},
		trimCount: map[string]int{}, lastTrim: time.Now(), ruleBytes: map[string]int64{}, principalBytes: map[string]int64{},
		tailBytes: map[tailKey]int64{}}
}

// push adds a run to the batch: held (encoded), or superseded at once.
func (w *batchWriter) push(it *Item) {
	w.n++
	w.bytes += it.Bytes
	w.seq++
	it.seq = w.seq
	if !it.Final || it.Run.Status == rules.StatusRunning {
		w.hold(it)
		w.fifo = append(w.fifo, it)
		return
	}
	k := tailKey{it.Run.Rule, it.Run.Status}
	w.arrived[k]++
	t := w.tails[k]
	if t == nil {
		t = &tail{}
		w.tails[k] = t
	}
	if len(*t) < w.r.keep {
		w.hold(it)
		heap.Push(t, it)
		w.fitBytes(k, t, len(it.json))
		return
	}
	w.superseded[k.rule] = true
	if older((*t)[0], it) >= 0 { // not newer than any held: superseded as it comes
		return
	}
	w.held--
	gone := len((*t)[0].json)
	(*t)[0].json = nil // the oldest held goes
	w.hold(it)
	(*t)[0] = it
	heap.Fix(t, 0)
	w.fitBytes(k, t, len(it.json)-gone)
}

// hold encodes a run's envelope (exactly sized) and counts it held.
func (w *batchWriter) hold(it *Item) {
	w.held++
	if it.Env == nil {
		return
	}
	b, err := appendEnvelope(w.scratch[:0], it.Env)
	if err != nil {
		w.r.log.Warn("encoding run record", "run", it.Run.ID, "err", err)
		b = append(b[:0], `{"run_id":`+strconv.Quote(it.Run.ID)+`}`...)
	}
	it.json = append(make([]byte, 0, len(b)), b...)
	if it.Owned {
		release(it.Env)
	}
	it.Env = nil
	if cap(b) <= scratchMax {
		w.scratch = b
	}
}

// release empties an encoded firing's envelope, its trace and its output:
// they share one allocation with the queued item (FiringRecord), which the
// batch holds until it is written, and would keep the trace's steps, calls
// and variables alive beside their JSON.
func release(env *Envelope) {
	if env.Trace != nil {
		*env.Trace = pilotage.Trace{}
	}
	if o, ok := env.Output.(*firingOutput); ok {
		*o = firingOutput{}
	}
	*env = Envelope{}
}

// appendEnvelope appends env encoded byte for byte as json.Marshal(env)
// would (envelope's field order, tags and omitempty), without encoding/json's
// reflection over the maps a firing's output and trace are made of.
func appendEnvelope(b []byte, env *Envelope) ([]byte, error) {
	var err error
	b = append(b, `{"run_id":`...)
	b = pilotage.AppendJSONString(b, env.RunID)
	b = append(b, `,"outcome":`...)
	if b, err = pilotage.AppendJSON(b, &env.Outcome); err != nil {
		return b, err
	}
	if env.Output != nil {
		b = append(b, `,"output":`...)
		if b, err = appendOutput(b, env.Output); err != nil {
			return b, err
		}
	}
	if env.Trace != nil {
		b = append(b, `,"trace":`...)
		if b, err = pilotage.AppendJSON(b, env.Trace); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendOutput is pilotage.AppendJSON, except that call records (a
// firing's output is {"calls": []rules.CallRecord, "vars": …}), which
// pilotage cannot name, are encoded here rather than by json.Marshal.
func appendOutput(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case *firingOutput:
		b = append(b, `{"calls":`...)
		b, err := appendCalls(b, x.calls)
		if err != nil {
			return b, err
		}
		b = append(b, `,"vars":`...)
		if x.vars == nil {
			b = append(b, "{}"...)
		} else if b, err = pilotage.AppendJSON(b, x.vars); err != nil {
			return b, err
		}
		return append(b, '}'), nil
	case []rules.CallRecord:
		return appendCalls(b, x)
	case map[string]any:
		if x == nil {
			break
		}
		var buf [8]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // encoding/json's key order
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = pilotage.AppendJSONString(b, k)
			b = append(b, ':')
			var err error
			if calls, ok := x[k].([]rules.CallRecord); ok {
				b, err = appendCalls(b, calls)
			} else {
				b, err = pilotage.AppendJSON(b, x[k])
			}
			if err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return pilotage.AppendJSON(b, v)
}

// appendCalls encodes call records as json.Marshal does (rules.CallRecord's
// tags; TestEnvelopeEncodingTags fails when they change).
func appendCalls(b []byte, cs []rules.CallRecord) ([]byte, error) {
	if cs == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '[')
	for i := range cs {
		c := &cs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"step":`...)
		b = pilotage.AppendJSONString(b, c.Step)
		b = append(b, `,"id":`...)
		b = pilotage.AppendJSONString(b, c.ID)
		if len(c.Args) > 0 {
			b = append(b, `,"args":`...)
			if b, err = pilotage.AppendJSON(b, c.Args); err != nil {
				return b, err
			}
		}
		if c.Output != nil {
			b = append(b, `,"output":`...)
			if b, err = pilotage.AppendJSON(b, c.Output); err != nil {
				return b, err
			}
		}
		if c.Error != "" {
			b = append(b, `,"error":`...)
			b = pilotage.AppendJSONString(b, c.Error)
		}
		b = append(b, `,"at":`...)
		if b, err = pilotage.AppendJSON(b, &c.At); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// tail holds the newest keep final firings of a rule with one status: a
// heap whose root is the oldest (by start then id, the trim's order).
type tail []*Item

func older(a, b *Item) int {
	return cmp.Or(a.Run.Started.Compare(b.Run.Started), cmp.Compare(a.Run.ID, b.Run.ID))
}

func (t tail) Len() int           { return len(t) }
func (t tail) Less(i, j int) bool { return older(t[i], t[j]) < 0 }
func (t tail) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *tail) Push(x any)        { *t = append(*t, x.(*Item)) }
func (t *tail) Pop() any {
	old := *t
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*t = old[:len(old)-1]
	return it
}

// write stores the batch in one transaction (a commit per batch: commits
// are what cost) and returns how many runs were pushed into it; when that
// fails, writeChunks writes the rows again.
func (w *batchWriter) write() int {
	n := w.n
	if n == 0 {
		return 0
	}
	w.gather()
	o := w.trimOptions()
	r := w.r
	ctx, cancel := context.WithTimeout(context.Background(), r.limits.write)
	w.slice0 = time.Now()
	o.Yield, o.EncodedJSON = w.pace, true
	got, err := r.store.WriteRuns(ctx, w.rows, o)
	cancel()
	if err != nil {
		w.retryTrims(o) // due again with a later batch
		w.writeChunks(o, err)
	} else {
		r.stats.trimmed.Add(uint64(got.Rule))
		r.stats.trimmedPrincipal.Add(uint64(got.Principal))
		r.committed(w.kept)
	}
	r.stats.superseded.Add(uint64(n - len(w.kept)))
	r.queuedBytes.Add(-w.bytes)
	w.bytes = 0
	r.settled(n)
	clear(w.rows) // let the envelopes go
	w.rows = w.rows[:0]
	clear(w.kept)
	w.kept = w.kept[:0]
	w.n, w.held, w.urgent = 0, 0, false
	clear(w.superseded)
	return n
}

// nextLinger is the linger of the next batch, from the n runs of the one
// just written that took d to gather: lingerBusy when, at the same rates,
// it would let the retention policy skip at least a quarter of the runs,
// lingerSteady when n is steadyRuns or more.
func (w *batchWriter) nextLinger(n int, d time.Duration) time.Duration {
	defer clear(w.arrived)
	if n == 0 {
		return lingerIdle
	}
	scale := lingerBusy.Seconds() / max(d.Seconds(), lingerIdle.Seconds())
	skip := 0.0
	for _, a := range w.arrived {
		skip += max(0, float64(a)*scale-float64(w.r.keep))
	}
	switch {
	case skip >= 0.25*float64(n)*scale:
		return lingerBusy
	case n >= steadyRuns:
		return lingerSteady
	}
	return lingerIdle
}

// pace runs between rows while a batch is written. It yields
// the processor (every yieldSlice), and in a busy batch (lingerBusy: thousands of rows, tens
// of ms of CPU) it sleeps twice as long as each paceSlice of work took, at
// most paceMax, unless the queue is filling (an eighth full or kicked), a
// flush waits or the recorder closes: the batch is spread over a few
// hundred ms at about a third of a core, rather than take a whole core at
// once from the event path, the broker and the devices that share a small
// house server's two. (The slice is wall time: on a crowded machine it
// includes time the writer waited for a processor, hence the cap.)
func (w *batchWriter) pace() {
	w.yield.Yield()
	if !w.paced {
		return
	}
	d := time.Since(w.slice0)
	if d < paceSlice {
		return
	}
	if !w.urgent && len(w.r.hurry) == 0 && len(w.r.ch) < cap(w.r.ch)/8 && len(w.r.kick) == 0 {
		time.Sleep(min(2*d, paceMax))
	}
	w.slice0 = time.Now()
}

// gather moves the held runs into kept, in queue order, and fills their
// rows.
func (w *batchWriter) gather() {
	w.kept = append(w.kept, w.fifo...)
	clear(w.fifo)
	w.fifo = w.fifo[:0]
	clear(w.tailBytes)
	for k, t := range w.tails {
		if len(*t) == 0 { // a rule that fired in the batch before: its tail goes
			delete(w.tails, k)
			continue
		}
		w.kept = append(w.kept, *t...)
		clear(*t)
		*t = (*t)[:0]
	}
	slices.SortFunc(w.kept, func(a, b *Item) int { return cmp.Compare(a.seq, b.seq) })
	for _, it := range w.kept {
		w.rows = append(w.rows, it.Run)
		w.rows[len(w.rows)-1].Envelope = it.json
		it.json = nil
	}
}
