// Package history records the devices' state changes off the ingestion
// path, in batches, for the charts and since().
package history

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/background"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// Config configures the state history recorder.
type Config struct {
	// Off: record nothing (the device page then shows no charts).
	Off bool
	// Retention is how long changes are kept (default 10 days).
	Retention time.Duration
	// MaxRows bounds the stored changes; the oldest go first (default
	// 2,000,000, about 90 MB of small values). Numeric states keep
	// 5-minute summaries for the whole retention beyond it.
	MaxRows int
	// MaxBytes bounds the stored changes' bytes the same way (default
	// 256 MiB): values of up to MaxValueBytes from the bus would make
	// MaxRows alone about 2.2 GB, while small values stay under it.
	MaxBytes int64
	// FlushEvery is how often queued changes are written (default 2 s).
	FlushEvery time.Duration
	// Queue bounds the changes waiting for a write (default 8,192); more
	// are dropped and counted (Status).
	Queue int
	// QueueBytes bounds the bytes of the values waiting for a write
	// (default 8 MiB), since a bus can fill a count-bounded queue with
	// values of the message bound.
	QueueBytes int
}

// Defaults fills in the defaults of what is not set.
func (c *Config) Defaults() {
	if c.Retention <= 0 {
		c.Retention = 10 * 24 * time.Hour
	}
	if c.MaxRows <= 0 {
		c.MaxRows = 2_000_000
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 256 << 20
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = 2 * time.Second
	}
	if c.Queue <= 0 {
		c.Queue = 8192
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 8 << 20
	}
}

// Status is the recorder's health, for /healthz.
type Status struct {
	On      bool   `json:"on"`
	Written uint64 `json:"written"`
	// Same values were their state's recorded one: no change, no row.
	Same uint64 `json:"same"`
	// Dropped changes found the queue full; Failed were lost to writes
	// that failed (the storage status says why).
	Dropped uint64 `json:"dropped"`
	Failed  uint64 `json:"failed"`
	Queued  int    `json:"queued"`
	// QueuedBytes is about how many bytes the queued values hold.
	QueuedBytes int `json:"queued_bytes"`
	// TooLarge values were over MaxValueBytes: a marker with their size
	// was recorded instead.
	TooLarge uint64 `json:"too_large"`
	// Trimmed rows were deleted to stay within MaxRows, TrimmedForBytes
	// within MaxBytes.
	Trimmed         uint64 `json:"trimmed"`
	TrimmedForBytes uint64 `json:"trimmed_for_bytes"`
	MaxRows         int    `json:"max_rows"`
	MaxBytes        int64  `json:"max_bytes"`
	Retention       string `json:"retention"`
}

// Recorder records state changes off the ingestion path: the
// catalog's change feed appends each to a bounded buffer under a mutex (no
// allocation, no channel, no goroutine wake-up), and a writer swaps the
// buffer out every FlushEvery (or when it is half full) and writes it in
// one transaction, yielding between rows.
type Recorder struct {
	store *storage.Store
	log   *slog.Logger
	cfg   Config
	now   func() time.Time
	devs  *devices.Catalog

	mu     sync.Mutex
	buf    []histItem // cap = cfg.Queue, never grown
	qbytes int        // the queued items' cost (item), at most cfg.QueueBytes
	spare  []histItem // the writer's buffer between swaps
	wake   chan struct{}
	flush  chan chan struct{}
	stop   chan struct{}
	done   chan struct{}
	unsub  func()

	started                                                    atomic.Bool
	dropped, written, same, failed, trimmed, tooLarge, byBytes atomic.Uint64
	// The writer's own:
	pts      []storage.HistoryPoint // reused from batch to batch
	ids      storage.HistoryIDs     // entity ids, kept between writes
	sums     storage.HistorySums    // 5-minute summaries, written every sumsEvery
	lastSums time.Time
	failures int // failed writes, for the log
	yield    background.Yielder
}

type histItem struct {
	id string
	v  any
	t  time.Time
	// big, when not 0, is the size of a value over MaxValueBytes, which
	// is not kept (v is nil).
	big int
}

func New(store *storage.Store, devs *devices.Catalog, log *slog.Logger, cfg Config, now func() time.Time) *Recorder {
	return &Recorder{store: store, devs: devs, log: log, cfg: cfg, now: now,
		buf: make([]histItem, 0, cfg.Queue), spare: make([]histItem, 0, cfg.Queue),
		wake: make(chan struct{}, 1), flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// onChange is the catalog subscriber: it runs on the ingestion goroutine
// for every live change.
func (h *Recorder) onChange(c devices.Change) {
	if c.Kind != devices.ChangeState {
		return
	}
	it, cost := item(c.ID, c.Value, c.Time) // sized outside the lock Status takes
	h.mu.Lock()
	n, half := len(h.buf), h.qbytes < h.cfg.QueueBytes/2
	if n == cap(h.buf) || h.qbytes+cost > h.cfg.QueueBytes {
		h.mu.Unlock()
		h.dropped.Add(1)
		return
	}
	h.buf = append(h.buf, it)
	h.qbytes += cost
	half = half && h.qbytes >= h.cfg.QueueBytes/2
	h.mu.Unlock()
	if n+1 == h.cfg.Queue/2 || half {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

// Start subscribes to the catalog, writes the values that arrived before
// it subscribed, and starts the writer. It returns once they are written:
// a process killed within FlushEvery of its start would otherwise lose
// them, and a change seen at this start would fire again at the next.
func (h *Recorder) Start(ctx context.Context) {
	h.unsub = h.devs.Subscribe(h.onChange)
	h.seed(ctx)
	h.write(ctx, false) // the writer's own state is Start's until the loop starts
	h.started.Store(true)
	go h.loop(ctx)
}

// seed records the current value of every state: the catalog starts
// first, and the next start reads this row as the value before its
// restart (without it a change seen at this start would fire again at
// every start). The storage writes only changes, so a value the feed
// reported too, or the one recorded before the start, adds no point.
func (h *Recorder) seed(ctx context.Context) {
	for _, e := range h.devs.Snapshot().Entries() {
		if e.Kind != pilotage.KindState {
			continue
		}
		l, ok := h.devs.Live(e.ID)
		if !ok || l.Value == nil || l.LastChanged.IsZero() {
			continue
		}
		if !h.seedOne(e.ID, l) {
			h.write(ctx, false) // a full queue is written, not dropped
			if !h.seedOne(e.ID, l) {
				h.dropped.Add(1)
			}
		}
	}
}

// seedOne queues l as id's value; false: the queue is full.
func (h *Recorder) seedOne(id string, l devices.Live) bool {
	it, cost := item(id, l.Value, l.LastChanged)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) == cap(h.buf) || h.qbytes+cost > h.cfg.QueueBytes {
		return false
	}
	h.buf = append(h.buf, it)
	h.qbytes += cost
	return true
}

// Close stops listening and writes what is queued.
func (h *Recorder) Close() {
	if !h.started.Load() {
		return
	}
	h.unsub()
	close(h.stop)
	<-h.done
}

// Sync writes everything queued so far before it returns.
func (h *Recorder) Sync() {
	if !h.started.Load() {
		return
	}
	done := make(chan struct{})
	select {
	case h.flush <- done:
		<-done
	case <-h.done:
	}
}

func (h *Recorder) loop(ctx context.Context) {
	background.Lower()
	defer close(h.done)
	// Writes are short and end with the loop (stop): the engine's context
	// is cancelled before the recorder's last write.
	ctx = context.WithoutCancel(ctx)
	tick := time.NewTicker(h.cfg.FlushEvery)
	defer tick.Stop()
	purge := time.NewTicker(time.Hour)
	defer purge.Stop()
	h.purge(ctx)
	for {
		select {
		case <-h.stop:
			h.write(ctx, true)
			return
		case <-tick.C:
			h.write(ctx, false)
		case <-h.wake:
			h.write(ctx, false)
		case d := <-h.flush:
			h.write(ctx, true)
			close(d)
		case <-purge.C:
			h.purge(ctx)
		}
	}
}

// sumsEvery is how often the 5-minute summaries are written: one row per
// numeric state per sumsEvery, not per batch (a crash loses at most this
// much of the summaries; the changes themselves are in their batches).
const sumsEvery = 30 * time.Second

// write swaps the buffer out and writes it; the summaries too every
// sumsEvery, or when sums says so.
func (h *Recorder) write(ctx context.Context, sums bool) {
	h.mu.Lock()
	items := h.buf
	h.buf = h.spare
	h.qbytes = 0
	h.mu.Unlock()
	now := time.Now()
	sums = sums || now.Sub(h.lastSums) >= sumsEvery
	if len(items) == 0 && !sums {
		h.spare = items
		return
	}
	pts := h.pts[:0]
	for i := range items {
		p, ok := historyPoint(&items[i])
		if ok && len(p.JSON) > MaxValueBytes { // escapes made it longer than its estimate
			items[i].big, p.JSON = len(p.JSON), tooLargeJSON(len(p.JSON))
		}
		if items[i].big != 0 {
			h.tooLarge.Add(1)
		}
		if ok {
			pts = append(pts, p)
		}
	}
	clear(items) // drop the values' references
	h.spare = items[:0]
	w, err := h.store.WriteHistory(ctx, pts, storage.HistoryWrite{MaxRows: h.cfg.MaxRows, MaxBytes: h.cfg.MaxBytes, Yield: h.yield.Yield,
		IDs: &h.ids, Sums: &h.sums, FlushSums: sums})
	if err == nil && sums {
		h.lastSums = now
	}
	if err != nil {
		h.failed.Add(uint64(len(pts)))
		if h.failures++; h.failures == 1 || h.failures%100 == 0 {
			h.log.Warn("writing state history failed; changes lost", "changes", len(pts), "failed_writes", h.failures, "err", err)
		}
	} else {
		h.written.Add(uint64(w.Rows))
		h.same.Add(uint64(w.Same))
		h.trimmed.Add(uint64(w.Trimmed))
		h.byBytes.Add(uint64(w.TrimmedForBytes))
	}
	clear(pts)
	h.pts = pts[:0]
}

func (h *Recorder) purge(ctx context.Context) {
	n, err := h.store.PurgeHistory(ctx, h.now().Add(-h.cfg.Retention))
	switch {
	case err != nil && ctx.Err() == nil:
		h.log.Warn("purging old state history", "err", err)
	case n > 0:
		h.log.Info("purged old state history", "rows", n)
	}
}

// historyPoint encodes a change: numbers as numbers, anything else as
// JSON. Non-finite numbers are not recorded (JSON has none).
func historyPoint(it *histItem) (storage.HistoryPoint, bool) {
	p := storage.HistoryPoint{Entity: it.id, T: it.t}
	if it.big != 0 {
		p.JSON = tooLargeJSON(it.big)
		return p, true
	}
	switch v := it.v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return p, false
		}
		p.IsNum, p.Num = true, v
	case int:
		p.IsNum, p.Num = true, float64(v)
	case int64:
		p.IsNum, p.Num = true, float64(v)
	case bool:
		p.JSON = "false"
		if v {
			p.JSON = "true"
		}
	case nil:
		p.JSON = "null"
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return p, false
		}
		p.JSON = string(b)
	}
	return p, true
}

// Status reports the recorder's health (Retention is the engine's to say).
func (h *Recorder) Status() Status {
	h.mu.Lock()
	q, qb := len(h.buf), h.qbytes
	h.mu.Unlock()
	return Status{On: true, Written: h.written.Load(), Same: h.same.Load(), Dropped: h.dropped.Load(), Failed: h.failed.Load(),
		Queued: q, QueuedBytes: qb, TooLarge: h.tooLarge.Load(), Trimmed: h.trimmed.Load(),
		TrimmedForBytes: h.byBytes.Load(), MaxRows: h.cfg.MaxRows, MaxBytes: h.cfg.MaxBytes}
}

// BucketWidth divides span into at most points buckets: whole seconds,
// and whole multiples of the stored 5-minute summaries from 5 minutes up
// (so long ranges read the summaries).
func BucketWidth(span time.Duration, points int) time.Duration {
	w := (span + time.Duration(points) - 1) / time.Duration(points)
	const five = 5 * time.Minute
	if w > five {
		return (w + five - 1) / five * five
	}
	if w >= five-time.Minute {
		return five
	}
	return max((w+time.Second-1)/time.Second*time.Second, time.Second)
}

// Value is a stored value as rules read it: a number, or its JSON decoded
// (as written when it is no JSON).
func Value(v storage.HistoryValue) any {
	if v.IsNum {
		return v.Num
	}
	var out any
	if json.Unmarshal([]byte(v.JSON), &out) != nil {
		return v.JSON
	}
	return out
}
