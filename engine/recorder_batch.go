package engine

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// batchWriter is the recorder's writing side: one batch at a time, on the
// recorder's goroutine. As runs arrive it applies the retention policy:
// of a rule's final firings of one status it holds the newest keep, and
// an older one is superseded as soon as keep newer ones are held (its
// trace is released at once).
type batchWriter struct {
	r     *recorder
	fifo  []*recItem             // runs that are never superseded
	tails map[tailKey][]*recItem // final firings by rule and status
	// arrived counts the final firings of each rule and status pushed
	// into this batch (nextLinger).
	arrived map[tailKey]int
	held    int    // runs held (fifo and tails)
	n       int    // runs pushed into this batch
	seq     uint64 // queue order of the pushed runs
	// superseded lists the rules that had firings superseded in this
	// batch: their stored firings are trimmed with it.
	superseded map[string]bool
	rows       []storage.Run // the rows written
	kept       []*recItem    // their items, in queue order
	// arena holds encoded envelopes back to back: rows point into it until
	// InsertRuns has written them (the store copies them; nothing keeps a
	// batch's rows after). first is the batch's first arena, reused.
	arena, first []byte
	ends         []int // ends[i]: end of row i's envelope in its arena (-1: none)
	// Trimming is a separate statement per rule: done at most once per
	// trimEvery, for the rules that stored at least keep runs since, and
	// at once for a rule that stored hotTrim × keep runs since (a rule
	// firing thousands of times a second is trimmed by a few hundred rows
	// per batch, not tens of thousands in one statement every trimEvery),
	// or that had firings superseded in this batch.
	trimCount map[string]int
	lastTrim  time.Time
	slice0    time.Time // start of the current slice of work (pace)
	urgent    bool      // a flush waits: no pauses (pace)
	paced     bool      // a busy batch: pauses between slices of work (pace)
}

type tailKey struct{ rule, status string }

const (
	trimEvery  = 5 * time.Second
	hotTrim    = 4
	arenaChunk = 1 << 20
	paceSlice  = 2 * time.Millisecond
	paceMax    = 8 * time.Millisecond
)

func newBatchWriter(r *recorder) *batchWriter {
	return &batchWriter{r: r, tails: map[tailKey][]*recItem{}, arrived: map[tailKey]int{}, superseded: map[string]bool{},
		trimCount: map[string]int{}, lastTrim: time.Now()}
}

// push adds a run to the batch.
func (w *batchWriter) push(it *recItem) {
	w.n++
	w.held++
	w.seq++
	it.seq = w.seq
	if !it.final || it.run.Status == rules.StatusRunning {
		w.fifo = append(w.fifo, it)
		return
	}
	k := tailKey{it.run.Rule, it.run.Status}
	w.arrived[k]++
	t := append(w.tails[k], it)
	if len(t) >= 2*w.r.keep { // amortised: sorted and cut every keep arrivals
		t = w.cut(k.rule, t)
	}
	w.tails[k] = t
}

// cut keeps the newest keep of a tail, by start then id (the trim's
// order), and counts the others superseded.
func (w *batchWriter) cut(rule string, t []*recItem) []*recItem {
	keep := w.r.keep
	if len(t) <= keep {
		return t
	}
	slices.SortFunc(t, func(a, b *recItem) int {
		return cmp.Or(a.run.Started.Compare(b.run.Started), cmp.Compare(a.run.ID, b.run.ID))
	})
	drop := len(t) - keep
	w.held -= drop
	w.superseded[rule] = true
	n := copy(t, t[drop:])
	clear(t[n:])
	return t[:n]
}

// write stores the batch and returns how many runs were pushed into it.
func (w *batchWriter) write() int {
	n := w.n
	if n == 0 {
		return 0
	}
	w.gather()
	w.encode()
	trim := w.trims()
	r := w.r
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	w.slice0 = time.Now()
	err := r.store.InsertRuns(ctx, w.rows, storage.WriteOptions{Yield: w.pace, EncodedJSON: true, Trim: trim, KeepPerStatus: r.keep})
	cancel()
	if err != nil {
		r.log.Warn("writing run records", "count", len(w.rows), "trims", len(trim), "err", err)
		r.stats.failed.Add(uint64(len(w.rows)))
		for _, rule := range trim {
			w.trimCount[rule] += r.keep // retried with the next batch after trimEvery
		}
	} else {
		r.committed(w.kept)
	}
	r.stats.superseded.Add(uint64(n - len(w.kept)))
	r.settled(n)
	clear(w.rows) // no row keeps pointing into the arena
	w.rows = w.rows[:0]
	clear(w.kept) // let the envelopes go
	w.kept = w.kept[:0]
	w.n, w.held, w.urgent = 0, 0, false
	clear(w.superseded)
	w.arena = nil
	return n
}

// nextLinger is the linger of the next batch, from the n runs of the one
// just written that took d to gather: lingerBusy when, at the same rates,
// it would let the retention policy skip at least a quarter of the runs.
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
	if skip >= 0.25*float64(n)*scale {
		return lingerBusy
	}
	return lingerIdle
}

// pace runs between rows while a batch is encoded and written. It yields
// the processor, and in a busy batch (lingerBusy: thousands of rows, tens
// of ms of CPU) it sleeps twice as long as each paceSlice of work took, at
// most paceMax, unless the queue is filling (an eighth full or kicked), a
// flush waits or the recorder closes: the batch is spread over a few
// hundred ms at about a third of a core, rather than take a whole core at
// once from the event path, the broker and the devices that share a small
// house server's two. (The slice is wall time: on a crowded machine it
// includes time the writer waited for a processor, hence the cap.)
func (w *batchWriter) pace() {
	runtime.Gosched()
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

// gather moves the held runs into kept, in queue order.
func (w *batchWriter) gather() {
	w.kept = append(w.kept, w.fifo...)
	clear(w.fifo)
	w.fifo = w.fifo[:0]
	for k, t := range w.tails {
		if len(t) == 0 { // a rule that fired in the batch before: its slice goes
			delete(w.tails, k)
			continue
		}
		w.kept = append(w.kept, w.cut(k.rule, t)...)
		clear(t)
		w.tails[k] = t[:0]
	}
	slices.SortFunc(w.kept, func(a, b *recItem) int { return cmp.Compare(a.seq, b.seq) })
}

// encode fills the rows of the kept items, their envelopes encoded back to
// back into arenas of about arenaChunk bytes: the first is reused from
// batch to batch, and a big batch adds chunks rather than regrowing (and
// copying) one buffer.
func (w *batchWriter) encode() {
	w.slice0 = time.Now()
	w.arena, w.ends = w.first[:0], w.ends[:0]
	from := 0 // the first row whose envelope is in the current arena
	for _, it := range w.kept {
		if len(w.arena) >= arenaChunk {
			w.slice(from)
			from = len(w.rows)
			w.arena = make([]byte, 0, arenaChunk+arenaChunk/8)
		}
		w.rows = append(w.rows, it.run)
		if it.env == nil {
			w.ends = append(w.ends, -1)
			continue
		}
		start := len(w.arena)
		var err error
		w.arena, err = appendEnvelope(w.arena, it.env)
		if err != nil {
			w.r.log.Warn("encoding run record", "run", it.run.ID, "err", err)
			w.arena = append(w.arena[:start], `{"run_id":`+strconv.Quote(it.run.ID)+`}`...)
		}
		w.ends = append(w.ends, len(w.arena))
		it.env = nil
		w.pace()
	}
	w.slice(from)
}

// slice points rows from on at their envelopes in the current arena, once
// it has stopped growing.
func (w *batchWriter) slice(from int) {
	if from == 0 && cap(w.arena) <= 2*arenaChunk {
		w.first = w.arena // kept for the next batch
	}
	start := 0
	for i := from; i < len(w.rows); i++ {
		if end := w.ends[i]; end >= 0 {
			w.rows[i].Envelope = w.arena[start:end:end]
			start = end
		}
	}
}

// trims lists the rules to trim with this batch (rides in its
// transaction).
func (w *batchWriter) trims() []string {
	var trim []string
	for _, run := range w.rows {
		if run.Rule == "" || w.superseded[run.Rule] {
			continue
		}
		n := w.trimCount[run.Rule] + 1
		w.trimCount[run.Rule] = n
		if n == hotTrim*w.r.keep {
			trim = append(trim, run.Rule)
		}
	}
	for rule := range w.superseded {
		trim = append(trim, rule)
	}
	for _, rule := range trim {
		delete(w.trimCount, rule)
	}
	if time.Since(w.lastTrim) >= trimEvery {
		w.lastTrim = time.Now()
		for rule, n := range w.trimCount {
			if n >= w.r.keep {
				trim = append(trim, rule)
				delete(w.trimCount, rule)
			}
		}
	}
	slices.Sort(trim)
	return trim
}
