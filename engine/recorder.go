package engine

import (
	"context"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// recorder batches run records into SQLite through a bounded queue, so a
// firing never waits on the database. Overflow is counted and logged.
//
// Everything that costs is done here rather than on the firing's goroutine:
// the envelope is encoded to JSON by the recorder, and the batch yields the
// processor between rows so a long write never keeps a CPU away from event
// dispatch (on a 2-core house server the two compete).
type recorder struct {
	store   *storage.Store
	log     *slog.Logger
	keep    int
	ch      chan *recItem
	dropped atomic.Uint64
	written atomic.Uint64
	once    sync.Once
	started atomic.Bool
	done    chan struct{}
	// enq counts runs accepted into the queue, done those written (or
	// failed); flush waits for done to reach enq as it was at the call.
	enq, done2 atomic.Uint64
	mu         sync.Mutex
	progress   *sync.Cond
	// announce, when set, is told about every committed firing marked
	// announce (the live stream), after its batch's transaction.
	announce func(Event)
}

const recorderQueue = 1 << 14 // about 3 s of firings at 5,000/s

func newRecorder(store *storage.Store, log *slog.Logger, keep int) *recorder {
	r := &recorder{store: store, log: log, keep: keep, ch: make(chan *recItem, recorderQueue), done: make(chan struct{})}
	r.progress = sync.NewCond(&r.mu)
	return r
}

func (r *recorder) start() {
	r.started.Store(true)
	go r.loop()
}

// recItem is a queued run; env, when set, is encoded into run.Envelope by
// the recorder. env must not change once queued. announce: tell the live
// stream once the run is committed (a firing that ended).
type recItem struct {
	run      storage.Run
	env      *envelope
	announce bool
}

// add queues a run; it never blocks.
func (r *recorder) add(run storage.Run, env *envelope) { r.addItem(&recItem{run: run, env: env}) }

// addItem queues it; it never blocks. it must not change once queued.
func (r *recorder) addItem(it *recItem) {
	select {
	case r.ch <- it:
		r.enq.Add(1)
	default:
		if n := r.dropped.Add(1); n == 1 || n%1000 == 0 {
			r.log.Warn("run recorder queue full: firing records dropped", "dropped", n)
		}
	}
}

// pending reports whether runs are queued but not yet written.
func (r *recorder) pending() bool { return r.done2.Load() < r.enq.Load() }

// flush waits until everything queued so far is written (tests, shutdown).
func (r *recorder) flush() {
	target := r.enq.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.done2.Load() < target {
		if !r.started.Load() {
			return
		}
		r.progress.Wait()
	}
}

func (r *recorder) loop() {
	defer close(r.done)
	const maxBatch = 2048
	batch := make([]storage.Run, 0, maxBatch)
	items := make([]*recItem, 0, maxBatch)
	push := func(it *recItem) {
		batch = append(batch, it.run)
		items = append(items, it)
	}
	// Trimming is a separate statement per rule: do it at most once per
	// trimEvery, for the rules that stored at least keep runs since, and
	// at once for a rule that stored hotTrim × keep runs since (a rule
	// firing thousands of times a second is trimmed by a few hundred rows
	// per batch, not tens of thousands in one statement every trimEvery).
	const trimEvery = 5 * time.Second
	const hotTrim = 4
	trimCount := map[string]int{}
	lastTrim := time.Now()
	// arena holds a batch's encoded envelopes back to back, reused from
	// batch to batch: rows point into it until InsertRuns has written them
	// (the store copies them; nothing keeps a batch's rows after).
	var arena []byte
	var ends []int // ends[i]: end of item i's envelope in arena (-1: none)
	const maxArena = 2 << 20
	write := func() {
		if len(batch) == 0 {
			return
		}
		arena, ends = arena[:0], ends[:0]
		for i := range batch {
			env := items[i].env
			if env == nil {
				ends = append(ends, -1)
				continue
			}
			start := len(arena)
			var err error
			arena, err = appendEnvelope(arena, env)
			if err != nil {
				r.log.Warn("encoding run record", "run", batch[i].ID, "err", err)
				arena = append(arena[:start], `{"run_id":`+strconv.Quote(batch[i].ID)+`}`...)
			}
			ends = append(ends, len(arena))
			items[i].env = nil
			runtime.Gosched()
		}
		// Slices are taken once the arena has stopped growing.
		start := 0
		for i, end := range ends {
			if end >= 0 {
				batch[i].Envelope = arena[start:end:end]
				start = end
			}
		}
		// Trims ride in the batch's transaction.
		var trim []string
		for _, run := range batch {
			if run.Rule != "" {
				n := trimCount[run.Rule] + 1
				trimCount[run.Rule] = n
				if n == hotTrim*r.keep {
					trim = append(trim, run.Rule)
				}
			}
		}
		for _, rule := range trim {
			delete(trimCount, rule)
		}
		if time.Since(lastTrim) >= trimEvery {
			lastTrim = time.Now()
			for rule, n := range trimCount {
				if n >= r.keep {
					trim = append(trim, rule)
					delete(trimCount, rule)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.store.InsertRuns(ctx, batch, storage.WriteOptions{Yield: runtime.Gosched, EncodedJSON: true, Trim: trim, KeepPerStatus: r.keep})
		cancel()
		if err != nil {
			r.log.Warn("writing run records", "count", len(batch), "trims", len(trim), "err", err)
			for _, rule := range trim {
				trimCount[rule] += r.keep // retried with the next batch after trimEvery
			}
		} else {
			r.committed(items)
		}
		r.mu.Lock()
		r.done2.Add(uint64(len(batch)))
		r.progress.Broadcast()
		r.mu.Unlock()
		clear(batch) // no row keeps pointing into the arena
		batch = batch[:0]
		clear(items) // let the envelopes go
		items = items[:0]
		if cap(arena) > maxArena {
			arena = nil // an outsized batch's buffer is not kept
		}
	}
	// Commits are what cost: every commit rewrites each page it touched
	// into the WAL, and the per-rule index touches a page per rule fired.
	// Linger after the first run of a batch so a burst shares one
	// transaction (at 5,000 firings/s on 1,000 rules, 100 ms instead of
	// 20 ms cut the recorder's CPU per firing from 59 to 46 µs). A run
	// fetched by id meanwhile waits for its batch (Engine.retainedRun).
	const linger = 100 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		it, ok := <-r.ch
		if !ok {
			write()
			return
		}
		push(it)
		timer.Reset(linger)
	collect:
		for len(batch) < maxBatch {
			select {
			case it, ok := <-r.ch:
				if !ok {
					timer.Stop()
					write()
					return
				}
				push(it)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		write()
	}
}

// committed counts a committed batch and tells the live stream about its
// firings, in the order they were queued: only what is stored is announced.
func (r *recorder) committed(items []*recItem) {
	r.written.Add(uint64(len(items)))
	if r.announce == nil {
		return
	}
	for _, it := range items {
		if !it.announce {
			continue
		}
		run := &it.run
		r.announce(Event{Type: "firing", Rule: run.Rule, RunID: run.ID, Status: run.Status, OK: run.OK, Time: run.Ended,
			Principal: run.Principal, Ref: run.Ref})
	}
}

func (r *recorder) close() {
	r.once.Do(func() {
		close(r.ch)
		if r.started.Load() {
			<-r.done
		}
	})
}

// appendEnvelope appends env encoded byte for byte as json.Marshal(env)
// would (envelope's field order, tags and omitempty), without encoding/json's
// reflection over the maps a firing's output and trace are made of.
func appendEnvelope(b []byte, env *envelope) ([]byte, error) {
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
