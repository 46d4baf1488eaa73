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
// recorder's goroutine.
type batchWriter struct {
	r     *recorder
	items []*recItem
	rows  []storage.Run // the rows written (items not superseded)
	kept  []*recItem    // their items, in queue order
	// arena holds a batch's encoded envelopes back to back, reused from
	// batch to batch: rows point into it until InsertRuns has written them
	// (the store copies them; nothing keeps a batch's rows after).
	arena []byte
	ends  []int // ends[i]: end of row i's envelope in arena (-1: none)
	// Trimming is a separate statement per rule: done at most once per
	// trimEvery, for the rules that stored at least keep runs since, and
	// at once for a rule that stored hotTrim × keep runs since (a rule
	// firing thousands of times a second is trimmed by a few hundred rows
	// per batch, not tens of thousands in one statement every trimEvery),
	// or that had firings superseded in this batch.
	trimCount map[string]int
	lastTrim  time.Time
}

const (
	trimEvery = 5 * time.Second
	hotTrim   = 4
	maxArena  = 2 << 20
)

func newBatchWriter(r *recorder) *batchWriter {
	return &batchWriter{r: r, trimCount: map[string]int{}, lastTrim: time.Now()}
}

func (w *batchWriter) push(it *recItem) { w.items = append(w.items, it) }

// write stores the batch and returns how many runs it held.
func (w *batchWriter) write() int {
	n := len(w.items)
	if n == 0 {
		return 0
	}
	superseded := w.supersede()
	w.encode()
	trim := w.trims(superseded)
	r := w.r
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := r.store.InsertRuns(ctx, w.rows, storage.WriteOptions{Yield: runtime.Gosched, EncodedJSON: true, Trim: trim, KeepPerStatus: r.keep})
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
	clear(w.items) // let the envelopes go
	w.items = w.items[:0]
	clear(w.kept)
	w.kept = w.kept[:0]
	if cap(w.arena) > maxArena {
		w.arena = nil // an outsized batch's buffer is not kept
	}
	return n
}

// supersede keeps, of each rule's final firings of one status in the
// batch, the newest keep (by start, then id: the trim's order), and
// returns the rules that had older ones (those are not written; the
// stored ones of those rules are trimmed with this batch).
func (w *batchWriter) supersede() map[string]bool {
	type key struct{ rule, status string }
	count := map[key]int{}
	for _, it := range w.items {
		if it.final && it.run.Status != rules.StatusRunning {
			count[key{it.run.Rule, it.run.Status}]++
		}
	}
	var drop map[*recItem]bool
	var superseded map[string]bool
	for k, n := range count {
		if n <= w.r.keep {
			continue
		}
		if drop == nil {
			drop, superseded = map[*recItem]bool{}, map[string]bool{}
		}
		superseded[k.rule] = true
		group := make([]*recItem, 0, n)
		for _, it := range w.items {
			if it.final && it.run.Rule == k.rule && it.run.Status == k.status {
				group = append(group, it)
			}
		}
		slices.SortFunc(group, func(a, b *recItem) int {
			return cmp.Or(a.run.Started.Compare(b.run.Started), cmp.Compare(a.run.ID, b.run.ID))
		})
		for _, it := range group[:n-w.r.keep] {
			drop[it] = true
		}
	}
	for _, it := range w.items {
		if !drop[it] {
			w.kept = append(w.kept, it)
		}
	}
	return superseded
}

// encode fills the rows of the kept items, their envelopes encoded into
// the arena.
func (w *batchWriter) encode() {
	w.arena, w.ends = w.arena[:0], w.ends[:0]
	for _, it := range w.kept {
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
		runtime.Gosched()
	}
	// Slices are taken once the arena has stopped growing.
	start := 0
	for i, end := range w.ends {
		if end >= 0 {
			w.rows[i].Envelope = w.arena[start:end:end]
			start = end
		}
	}
}

// trims lists the rules to trim with this batch (rides in its
// transaction).
func (w *batchWriter) trims(superseded map[string]bool) []string {
	var trim []string
	for _, run := range w.rows {
		if run.Rule == "" || superseded[run.Rule] {
			continue
		}
		n := w.trimCount[run.Rule] + 1
		w.trimCount[run.Rule] = n
		if n == hotTrim*w.r.keep {
			trim = append(trim, run.Rule)
		}
	}
	for rule := range superseded {
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
