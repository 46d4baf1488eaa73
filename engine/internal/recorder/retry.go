package recorder

import (
	"context"
	"runtime"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// writeLimits are the deadlines of a batch's write and of its retry.
type writeLimits struct {
	write   time.Duration   // the batch's one transaction
	chunk   int             // rows per transaction when the batch is written again
	retries []time.Duration // each chunk's tries
}

func defaultWriteLimits() writeLimits {
	return writeLimits{write: 10 * time.Second, chunk: 64,
		retries: []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second}}
}

// writeChunks writes again the rows of a batch whose transaction failed
// (err), limits.chunk rows per transaction, each tried with every deadline
// of limits.retries. Under a CPU burst
// the recorder's thread (nice 10) gets a few percent of a core: thousands
// of rows in one transaction cannot finish within any deadline, while
// each chunk that commits is kept. The batch's trims (o) wait for a later
// batch: a principal's trim scans all its firings. Past a chunk that
// failed every try, the rest is counted failed: the database refuses
// writes, and trying each chunk would hold the recorder for minutes.
func (w *batchWriter) writeChunks(o storage.WriteOptions, err error) {
	r := w.r
	r.log.Warn("writing run records failed; writing them again in chunks", "count", len(w.rows),
		"trims", len(o.Trim)+len(o.TrimPrincipals), "err", err)
	o.Trim, o.TrimPrincipals = nil, nil
	o.Yield = nil // the batch is late already; a chunk is milliseconds of work
	began, failed := time.Now(), 0
	for at := 0; at < len(w.rows); at += r.limits.chunk {
		end := min(at+r.limits.chunk, len(w.rows))
		tries, err := w.writeChunk(w.rows[at:end], o)
		failed += tries - 1
		if err != nil {
			lost := len(w.rows) - at
			r.log.Warn("writing run records", "failed", lost, "written", at, "err", err)
			r.stats.failed.Add(uint64(lost))
			return
		}
		r.committed(w.kept[at:end])
		runtime.Gosched() // between chunks, the firings' goroutines run
	}
	r.log.Info("run records written again in chunks", "count", len(w.rows), "failed_tries", failed, "took", time.Since(began))
}

// writeChunk writes rows in one transaction, tried with each of
// limits.retries' deadlines in turn, and says how many tries it took.
func (w *batchWriter) writeChunk(rows []storage.Run, o storage.WriteOptions) (int, error) {
	var err error
	for i, d := range w.r.limits.retries {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_, err = w.r.store.WriteRuns(ctx, rows, o)
		cancel()
		if err == nil {
			return i + 1, nil
		}
	}
	return len(w.r.limits.retries), err
}
