// Package recorder owns the run records: queued and written to SQLite in
// batches off the firing's path, encoded as JSON envelopes, and read back
// (decoded, narrated).
package recorder

import (
	"encoding/json"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/background"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// recorder batches run records into SQLite through a bounded queue, so a
// firing never waits on the database.
//
// Everything that costs is done here rather than on the firing's goroutine:
// the envelope is encoded to JSON by the recorder, and the batch yields the
// processor between rows so a long write never keeps a CPU away from event
// dispatch (on a 2-core house server the two compete).
//
// Under load it does less per firing rather than fall behind: batches
// linger longer (one commit for up to a second of firings), and a batch
// does not write the firings the retention policy would trim at once (of a
// rule's finished firings of one status, only the newest keep per status
// are kept, and a batch holding more than keep of them, or more than
// MaxRuleBytes, supersedes the older ones: counted, never written, never
// announced). Past the queue, a firing
// keeps a summary record (outcome and times, no trace: counted); only past
// the summaries' bound too is a record dropped (counted and logged).
type Recorder struct {
	store *storage.Store
	log   *slog.Logger
	keep  int
	ch    chan *Item
	over  overflow      // bounded by overMax
	hurry chan struct{} // flush: write the batch now
	kick  chan struct{} // the queue fills: take what is queued
	stats recorderCounts
	once  sync.Once
	// limits are the write's deadlines (tests shorten them).
	limits writeLimits

	started atomic.Bool
	done    chan struct{}
	// enq counts runs accepted (queued or summarized), done2 those
	// written, superseded or failed; flush waits for done2 to reach enq as
	// it was at the call.
	enq, done2 atomic.Uint64
	// queuedBytes is the Bytes of the firings queued or in the batch
	// being made (maxQueuedBytes).
	queuedBytes atomic.Int64
	mu          sync.Mutex
	progress    *sync.Cond
	// Announce, when set, is told about every committed firing marked
	// Announce (the live stream), after its batch's transaction.
	Announce func(run *storage.Run)
	// MaxRuleBytes and MaxPrincipalBytes, when set before Start, bound the
	// bytes of the finished firings kept of each rule and each principal
	// (limits.max_stored_rule_bytes, max_stored_firing_bytes).
	MaxRuleBytes, MaxPrincipalBytes int64
	// Unbounded, when set, names the principals MaxPrincipalBytes does
	// not bound (admins: a large house's scan would cost seconds).
	Unbounded func(principal string) bool
}

// overflow holds summary records of firings that found the queue full.
type overflow struct {
	mu    sync.Mutex
	items []*Item
	max   int
	kick  chan struct{} // wakes the writer
}

type recorderCounts struct {
	written, superseded, summarized, dropped, failed atomic.Uint64
	trimmed, trimmedPrincipal                        atomic.Uint64
}

// Stats counts what became of the run records handed to the
// recorder since the start.
type Stats struct {
	Written    uint64 `json:"written"`    // stored (with their trace, or as summaries)
	Superseded uint64 `json:"superseded"` // trimmed by the retention policy before they were written
	Summarized uint64 `json:"summarized"` // kept as a summary record (no trace): the queue was full
	Dropped    uint64 `json:"dropped"`    // lost: the summaries' bound was reached too
	Failed     uint64 `json:"failed"`     // lost: the database refused the batch
	Queued     uint64 `json:"queued"`     // accepted, not written yet
	// Stored firings deleted to keep a rule's count and bytes
	// (KeepPerStatus, limits.max_stored_rule_bytes), and a principal's
	// bytes (limits.max_stored_firing_bytes).
	Trimmed          uint64 `json:"trimmed"`
	TrimmedPrincipal uint64 `json:"trimmed_principal"`
}

const (
	recorderQueue = 1 << 14 // firings waiting for the writer with their traces
	// maxQueuedBytes bounds what the queued and batched firings record
	// together: a guest's firings each recording megabytes took the server
	// past 500 MB while their batch waited.
	maxQueuedBytes = 64 << 20
	overflowMax    = 1 << 16 // summary records waiting beyond the queue
	// kickAt: the writer takes what is queued once the queue is 1/kickAt
	// full (a queued firing holds its objects, about 3 KB; a batch holds
	// its JSON).
	kickAt = 16
)

func New(store *storage.Store, log *slog.Logger, keep int) *Recorder {
	return NewSized(store, log, keep, recorderQueue, overflowMax)
}

func NewSized(store *storage.Store, log *slog.Logger, keep, queue, overMax int) *Recorder {
	r := &Recorder{store: store, log: log, keep: keep, ch: make(chan *Item, queue), done: make(chan struct{}),
		limits: defaultWriteLimits()}
	r.over.kick, r.over.max = make(chan struct{}, 1), overMax
	r.hurry, r.kick = make(chan struct{}, 1), make(chan struct{}, 1)
	r.progress = sync.NewCond(&r.mu)
	return r
}

func (r *Recorder) Start() {
	r.started.Store(true)
	go r.loop()
}

// Envelope is what a stored run keeps: the facts that rode the response,
// with the trace at the recorded (full) level.
type Envelope struct {
	RunID   string           `json:"run_id"`
	Outcome pilotage.Outcome `json:"outcome"`
	Output  any              `json:"output,omitempty"`
	Trace   *pilotage.Trace  `json:"trace,omitempty"`
}

// Item is a queued run; env, when set, is encoded into run.Envelope by
// the recorder. env must not change once queued. Announce: tell the live
// stream once the run is committed (a firing that ended). Final: a
// finished firing recorded once (no earlier "running" row), which the
// retention policy may supersede. Owned: nothing else holds env (a
// firing's record), so once encoded the recorder empties it.
type Item struct {
	Run storage.Run
	Env *Envelope
	// Bytes is about what Env holds (the run's recorded bytes), counted
	// against maxQueuedBytes from AddItem until its batch is written.
	Bytes    int64
	json     []byte // env encoded, once the batch holds it
	Announce bool
	Final    bool
	Owned    bool
	seq      uint64 // queue order in its batch
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
		fr.Item.Bytes = int64(res.Bytes)
	}
	running := out.Status == rules.StatusRunning
	fr.Item.Run, fr.Item.Env, fr.Item.Announce, fr.Item.Final, fr.Item.Owned = run, &fr.Env, !running, mayEnd && !running, true
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

// Add queues a run; it never blocks.
func (r *Recorder) Add(run storage.Run, env *Envelope) { r.AddItem(&Item{Run: run, Env: env}) }

// AddItem queues it; it never blocks. it must not change once queued.
func (r *Recorder) AddItem(it *Item) {
	r.enq.Add(1)
	if r.queuedBytes.Add(it.Bytes) > maxQueuedBytes {
		r.queuedBytes.Add(-it.Bytes) // past the bytes queued: a summary, as past the queue
		r.summarize(it)
		return
	}
	select {
	case r.ch <- it:
		if len(r.ch) >= cap(r.ch)/kickAt { // time the writer took some
			select {
			case r.kick <- struct{}{}:
			default:
			}
		}
		return
	default:
	}
	r.queuedBytes.Add(-it.Bytes)
	r.summarize(it)
}

// summarize keeps a summary of it when the queue is full (a fresh small
// record, so the firing's trace can go), or drops it far behind.
func (r *Recorder) summarize(it *Item) {
	sum := &Item{Run: it.Run, Announce: it.Announce}
	sum.Run.Level = pilotage.LevelSummary
	if it.Env != nil {
		sum.Env = &Envelope{RunID: it.Env.RunID, Outcome: it.Env.Outcome}
	}
	r.over.mu.Lock()
	full := len(r.over.items) >= r.over.max
	if !full {
		r.over.items = append(r.over.items, sum)
	}
	r.over.mu.Unlock()
	if full {
		r.settled(1)
		if n := r.stats.dropped.Add(1); n == 1 || n%1000 == 0 {
			r.log.Warn("run recorder far behind: firing records dropped", "dropped", n)
		}
		return
	}
	if n := r.stats.summarized.Add(1); n == 1 || n%1000 == 0 {
		r.log.Warn("run recorder queue full: firings recorded as summaries, without their trace", "summarized", n)
	}
	select {
	case r.over.kick <- struct{}{}:
	default:
	}
}

// takeOverflow moves the waiting summaries out of the overflow.
func (r *Recorder) takeOverflow() []*Item {
	r.over.mu.Lock()
	defer r.over.mu.Unlock()
	out := r.over.items
	r.over.items = nil
	return out
}

// Stats reports the recorder's counts.
func (r *Recorder) Stats() Stats {
	st := Stats{Written: r.stats.written.Load(), Superseded: r.stats.superseded.Load(),
		Summarized: r.stats.summarized.Load(), Dropped: r.stats.dropped.Load(), Failed: r.stats.failed.Load(),
		Trimmed: r.stats.trimmed.Load(), TrimmedPrincipal: r.stats.trimmedPrincipal.Load()}
	if enq, done := r.enq.Load(), r.done2.Load(); enq > done {
		st.Queued = enq - done
	}
	return st
}

// settled counts n accepted runs as done (written, superseded, failed or
// dropped) and wakes flush.
func (r *Recorder) settled(n int) {
	r.mu.Lock()
	r.done2.Add(uint64(n))
	r.progress.Broadcast()
	r.mu.Unlock()
}

// Pending reports whether runs are queued but not yet written.
func (r *Recorder) Pending() bool { return r.done2.Load() < r.enq.Load() }

// Flush waits until everything queued so far is written (tests, shutdown).
func (r *Recorder) Flush() {
	target := r.enq.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.done2.Load() < target {
		if !r.started.Load() {
			return
		}
		select {
		case r.hurry <- struct{}{}:
		default:
		}
		r.progress.Wait()
	}
}

// Batching. Commits are what cost: every commit rewrites each page it
// touched into the WAL, and the per-rule index touches a page per rule
// fired. So a batch lingers after its first Run: lingerIdle when firings
// are few, lingerSteady once the last batch held steadyRuns or more, and
// lingerBusy when that lets the retention policy skip at least a quarter
// of the rows (rules firing more than keep times in lingerBusy, judged
// from the last batch). flush (a run fetched by id: Engine.retainedRun;
// shutdown) cuts the wait short. Figures: docs/performance.md.
const (
	lingerIdle   = 100 * time.Millisecond
	lingerSteady = 500 * time.Millisecond
	steadyRuns   = 32
	lingerBusy   = 2 * time.Second
	maxBatch     = recorderQueue
	drainSlice   = 64 // runs encoded between yields
)

func (r *Recorder) loop() {
	background.Lower()
	defer close(r.done)
	w := newBatchWriter(r)
	linger := lingerIdle
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var it *Item
		ok := true
		select {
		case it, ok = <-r.ch:
		case <-r.over.kick:
		}
		began := time.Now()
		if ok && it != nil {
			w.push(it)
			ok = w.collect(timer, linger)
		}
		for _, s := range r.takeOverflow() {
			w.push(s)
		}
		if !ok {
			w.urgent = true
		}
		w.paced = linger == lingerBusy
		n := w.write()
		if !ok {
			for _, s := range r.takeOverflow() { // added while closing
				w.push(s)
			}
			w.write()
			return
		}
		linger = w.nextLinger(n, time.Since(began))
	}
}

// collect adds queued runs to the batch until linger has passed since the
// first, the batch holds maxBatch runs or a flush asks; false once the
// queue is closed. It does not wake for every run (at 1,000 firings a
// second that was a thread wake-up each): it takes what is queued when
// the linger ends, or when the queue is 1/kickAt full (addItem kicks).
func (w *batchWriter) collect(timer *time.Timer, linger time.Duration) bool {
	timer.Reset(linger)
	defer timer.Stop()
	for w.held < maxBatch {
		select {
		case <-w.r.kick:
			if !w.drain() {
				return false
			}
		case <-w.r.hurry:
			w.urgent = true // written without pauses
			return w.drain()
		case <-timer.C:
			return w.drain()
		}
	}
	return true
}

// drain adds what is queued now (up to maxBatch) to the batch, yielding
// the processor now and then (each run is encoded); false once the queue
// is closed.
func (w *batchWriter) drain() bool {
	for i := 1; w.held < maxBatch; i++ {
		select {
		case it, ok := <-w.r.ch:
			if !ok {
				return false
			}
			w.push(it)
		default:
			return true
		}
		if i%drainSlice == 0 {
			runtime.Gosched()
		}
	}
	return true
}

// committed counts a committed batch and tells the live stream about its
// firings, in the order they were queued: only what is stored is announced.
func (r *Recorder) committed(items []*Item) {
	r.stats.written.Add(uint64(len(items)))
	if r.Announce == nil {
		return
	}
	for _, it := range items {
		if it.Announce {
			r.Announce(&it.Run)
		}
	}
}

func (r *Recorder) Close() {
	r.once.Do(func() {
		close(r.ch)
		select { // wake a lingering batch: it finds the queue closed
		case r.hurry <- struct{}{}:
		default:
		}
		if r.started.Load() {
			<-r.done
		}
	})
}
