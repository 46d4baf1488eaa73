// Package logbook owns the house's logbook: what happened (events, firings,
// rule changes, approvals, the broker), queued, told live and written in
// batches.
package logbook

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/background"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// Kind is one kind of logbook entry.
type Kind struct {
	Name, Doc string
}

// Kinds is the closed set of logbook entry kinds, in the order the
// logbook's filter lists them.
var Kinds = []Kind{
	{"event", "a device's event: a button press, a gesture"},
	{"availability", "a device went offline or came back online"},
	{"helper", "a helper's value changed, or its timer finished or was cancelled"},
	{"firing", "a rule fired"},
	{"rule", "a rule was installed, enabled, disabled or removed"},
	{"approval", "a risky deploy waits for a human's decision, or got it"},
	{"broker", "the connection to the MQTT broker was lost or came back"},
	{"server", "Pilothouse started or stopped"},
}

// Config configures the logbook's writer.
type Config struct {
	// MaxRows bounds the stored entries; the oldest go first (default
	// 100,000), each within its share (storage.LogShares): the bus's
	// (events, availability) keep at most half, so that a flood cannot
	// evict the owner's lines, each principal's rules a part of a
	// quarter for their firings and of a twentieth for their changes.
	// Entries older than the run retention are purged too.
	MaxRows int
	// Owner names the owner principal (default access.Owner's name) and
	// Guests the others configured (the engine sets them): each keeps a
	// part of the rules' share of the rows, and the guests' rules' lines
	// take at most a quarter of the queue.
	Owner  string
	Guests []string
	// FlushEvery is how often queued entries are written (default 1 s).
	FlushEvery time.Duration
	// Queue bounds the entries waiting for a write (default 4,096), and
	// QueueBytes their bytes (default 4 MiB); more are dropped and
	// counted (Status).
	Queue      int
	QueueBytes int
}

// maxText bounds an entry's text: a device's event carries whatever the
// bus sent, and a 255 KB action in every row filled the disk at 15 MB/s.
const maxText = 512

// maxValue bounds the bus's value in an event's text, leaving room in
// maxText for the entity's name.
const maxValue = maxText / 2

// entryBytes is what an entry holds in the queue: its strings and about
// the size of the rest.
func entryBytes(en storage.LogEntry) int {
	return 64 + len(en.Kind) + len(en.Device) + len(en.Area) + len(en.Rule) + len(en.Principal) + len(en.Ref) +
		len(en.Run) + len(en.Status) + len(en.Text)
}

func (c *Config) defaults() {
	if c.Owner == "" {
		c.Owner = access.Owner.Name
	}
	if c.MaxRows <= 0 {
		c.MaxRows = 100_000
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = time.Second
	}
	if c.Queue <= 0 {
		c.Queue = 4096
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 4 << 20
	}
}

// Entry is one logbook line as the UI shows it. Cursor pages on from
// it (entries read back from storage have one; live ones do not).
type Entry struct {
	Time   time.Time
	Kind   string
	Device string
	Area   string
	Rule   string
	RunID  string
	Status string
	Text   string
	Cursor string
	// whom it concerns (Concerns): a firing's run principal, a rule's
	// owner and program, an approval's requester.
	principal, ref string
}

// Concerns is whom the entry concerns, for the engine's scoping: a
// principal's name and, for a rule, its program.
func (en Entry) Concerns() (principal, ref string) { return en.principal, en.ref }

// Status is the logbook writer's health, for /healthz.
type Status struct {
	Written uint64 `json:"written"`
	// Dropped entries found the queue full; Failed were lost to writes
	// that failed (the storage status says why).
	Dropped uint64 `json:"dropped"`
	Failed  uint64 `json:"failed"`
	Trimmed uint64 `json:"trimmed"`
	// TrimmedBus of them were the bus's (events, availability), which
	// keep at most half of MaxRows, TrimmedFirings the rules' firings and
	// changes (a quarter and a twentieth, a part of each for each
	// principal), of which
	// TrimmedGuest were other principals' than the owner's: the rest is
	// the house's own lines'. DroppedBus of Dropped were the bus's, which
	// take at most half of the queue, DroppedGuest other principals'
	// rules' lines, which take at most a quarter.
	TrimmedBus     uint64 `json:"trimmed_bus"`
	TrimmedFirings uint64 `json:"trimmed_firings"`
	TrimmedGuest   uint64 `json:"trimmed_guest"`
	DroppedBus     uint64 `json:"dropped_bus"`
	DroppedGuest   uint64 `json:"dropped_guest"`
	// Cut entries had their text cut to its bound (the text says so).
	Cut     uint64 `json:"cut"`
	MaxRows int    `json:"max_rows"`
}

// logbook records what happened in the house: entries are queued under a
// mutex by whoever reports them (ingestion, the recorder, a deploy), told
// at once to live watchers, and written in batches by one goroutine.
type Logbook struct {
	store     *storage.Store
	log       *slog.Logger
	cfg       Config
	shares    *storage.LogShares
	now       func() time.Time
	retention time.Duration

	mu    sync.Mutex
	buf   []storage.LogEntry // cap = cfg.Queue, never grown
	bytes int                // buf's entryBytes, at most cfg.QueueBytes
	// busN and busBytes are the bus's part of buf: at most half of it, so
	// a flood on the bus leaves room for the house's own lines; guestN
	// and guestBytes other principals' rules' lines: at most a quarter,
	// so a guest's busy rules leave room for approvals and the owner's.
	busN, busBytes     int
	guestN, guestBytes int
	spare              []storage.LogEntry // the writer's buffer between swaps
	subs               map[chan Entry]struct{}
	flush              chan chan struct{}
	stop               chan struct{}
	done               chan struct{}
	unsub              func()
	// writing: a batch is between the queue and storage (settle waits
	// for it).
	writing bool

	started                           atomic.Bool
	dropped, written, failed, trimmed atomic.Uint64
	cut, trimmedBus, trimmedFirings   atomic.Uint64
	trimmedGuest                      atomic.Uint64
	droppedBus, droppedGuest          atomic.Uint64
	failures                          int // failed writes, for the log (the writer's own)
}

func New(store *storage.Store, log *slog.Logger, cfg Config, retention time.Duration, now func() time.Time) *Logbook {
	cfg.defaults()
	return &Logbook{store: store, log: log, cfg: cfg, now: now, retention: retention, shares: storage.NewLogShares(cfg.MaxRows, cfg.Owner, cfg.Guests),
		buf: make([]storage.LogEntry, 0, cfg.Queue), spare: make([]storage.LogEntry, 0, cfg.Queue), subs: map[chan Entry]struct{}{},
		flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// Add queues an entry for writing and tells the watchers; it never
// blocks (a full queue or a slow watcher loses the entry, counted). A
// text over maxText is cut, saying so.
func (b *Logbook) Add(en storage.LogEntry) {
	if b != nil {
		b.add(en, false)
	}
}

// add is Add for an entry whose text was already cut (cut: count it).
func (b *Logbook) add(en storage.LogEntry, cut bool) {
	var again bool
	if en.Text, again = shown.Cut(en.Text, maxText); cut || again {
		b.cut.Add(1)
	}
	if en.T.IsZero() {
		en.T = b.now()
	}
	live := EntryOf(en)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueue(en)
	for ch := range b.subs {
		select {
		case ch <- live:
		default:
		}
	}
}

// enqueue queues en unless the queue, or the part of it that en's source
// may take (the bus half, the guests' rules a quarter), is full; b.mu
// is held.
func (b *Logbook) enqueue(en storage.LogEntry) {
	size := entryBytes(en)
	bus, guest := storage.LogFromBus(en), b.shares.Guest(en)
	switch {
	case bus && (2*(b.busN+1) > cap(b.buf) || 2*(b.busBytes+size) > b.cfg.QueueBytes):
		b.dropped.Add(1)
		b.droppedBus.Add(1)
	case guest && (4*(b.guestN+1) > cap(b.buf) || 4*(b.guestBytes+size) > b.cfg.QueueBytes):
		b.dropped.Add(1)
		b.droppedGuest.Add(1)
	case len(b.buf) < cap(b.buf) && b.bytes+size <= b.cfg.QueueBytes:
		b.buf = append(b.buf, en)
		b.bytes += size
		if bus {
			b.busN, b.busBytes = b.busN+1, b.busBytes+size
		}
		if guest {
			b.guestN, b.guestBytes = b.guestN+1, b.guestBytes+size
		}
	default:
		b.dropped.Add(1)
	}
}

// EntryOf is a stored entry as the UI shows it.
func EntryOf(en storage.LogEntry) Entry {
	out := Entry{Time: en.T, Kind: en.Kind, Device: en.Device, Area: en.Area, Rule: en.Rule, RunID: en.Run,
		Status: en.Status, Text: en.Text, principal: en.Principal, ref: en.Ref}
	if en.ID != 0 {
		out.Cursor = fmt.Sprintf("%d-%d", en.T.UnixNano(), en.ID)
	}
	return out
}

// Start starts the writer and listens to devs (when not nil) for events
// and availability changes.
func (b *Logbook) Start(ctx context.Context, devs *devices.Catalog) {
	b.started.Store(true)
	go b.loop(context.WithoutCancel(ctx))
	if devs != nil {
		b.unsub = devs.Subscribe(func(c devices.Change) { b.onChange(devs, c) })
	}
}

// onChange runs on the ingestion goroutine: events (button presses) and
// availability changes after the first report become entries.
func (b *Logbook) onChange(devs *devices.Catalog, c devices.Change) {
	var en storage.LogEntry
	var cut bool
	switch c.Kind {
	case devices.ChangeEvent:
		dev, _ := devs.DeviceOf(c.ID)
		v, ok := c.Value.(string) // a press's action as it is said: toggle, not "toggle"
		if !ok {
			v = compact(c.Value)
		}
		// Cut before it is joined: the bus's value is not copied whole.
		v, cut = shown.Cut(v, maxValue)
		en = storage.LogEntry{Kind: "event", Device: dev, Text: c.ID + ": " + v}
	case devices.ChangeAvailability:
		on, ok := c.Value.(bool)
		if !ok || c.Prev == nil || c.Prev == c.Value {
			return // the first report after a start is no change
		}
		en = storage.LogEntry{Kind: "availability", Device: c.ID, Status: "online", Text: c.ID + " came back online"}
		if !on {
			en.Status, en.Text = "offline", c.ID+" went offline"
			if c.Why != "" {
				en.Text += " (" + c.Why + ")"
			}
		}
	default:
		return
	}
	en.T = c.Time
	if d, ok := devs.Snapshot().Get(en.Device); ok {
		if c.Kind == devices.ChangeEvent && isHelper(d.Tags) {
			// A helper's event (a timer's finished or cancelled) is in
			// the helper's own entry, with its cause: a second row for
			// it would show one happening twice.
			return
		}
		en.Area = areaOf(d.Tags)
	}
	b.add(en, cut)
}

// isHelper reports whether a device's tags make it a household helper.
func isHelper(tags []string) bool {
	return slices.ContainsFunc(tags, func(t string) bool { return strings.HasPrefix(t, "helper:") })
}

// Close stops listening and writes what is queued.
func (b *Logbook) Close() {
	if b == nil || !b.started.Load() {
		return
	}
	if b.unsub != nil {
		b.unsub()
	}
	close(b.stop)
	<-b.done
}

// Sync writes everything queued so far before it returns.
func (b *Logbook) Sync() {
	if b == nil || !b.started.Load() {
		return
	}
	done := make(chan struct{})
	select {
	case b.flush <- done:
		<-done
	case <-b.done:
	}
}

// Settle writes what is queued or being written, when anything is, so
// that a read of the logbook sees every entry already told live; it
// waits at most max (a loaded writer must not hold a page up).
func (b *Logbook) Settle(max time.Duration) {
	if b == nil || !b.started.Load() {
		return
	}
	b.mu.Lock()
	pending := len(b.buf) > 0 || b.writing
	b.mu.Unlock()
	if !pending {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	done := make(chan struct{})
	select {
	case b.flush <- done:
	case <-b.done:
		return
	case <-t.C:
		return
	}
	select {
	case <-done:
	case <-t.C:
	}
}

func (b *Logbook) loop(ctx context.Context) {
	background.Lower()
	defer close(b.done)
	tick := time.NewTicker(b.cfg.FlushEvery)
	defer tick.Stop()
	// The first purge waits a minute: a start has more urgent writes
	// (resumed windows, interrupted firings).
	purge := time.NewTimer(time.Minute)
	defer purge.Stop()
	for {
		select {
		case <-b.stop:
			b.write(ctx)
			return
		case <-tick.C:
			b.write(ctx)
		case d := <-b.flush:
			b.write(ctx)
			close(d)
		case <-purge.C:
			b.purge(ctx)
			purge.Reset(time.Hour)
		}
	}
}

func (b *Logbook) write(ctx context.Context) {
	b.mu.Lock()
	items := b.buf
	b.buf, b.bytes, b.busN, b.busBytes, b.guestN, b.guestBytes = b.spare, 0, 0, 0, 0, 0
	b.writing = len(items) > 0
	b.mu.Unlock()
	defer func() {
		clear(items)
		b.spare = items[:0]
		b.mu.Lock()
		b.writing = false
		b.mu.Unlock()
	}()
	if len(items) == 0 {
		return
	}
	n, err := b.store.WriteLog(ctx, items, b.shares)
	if err != nil {
		b.failed.Add(uint64(len(items)))
		if b.failures++; b.failures == 1 || b.failures%100 == 0 {
			b.log.Warn("writing the logbook failed; entries lost", "entries", len(items), "failed_writes", b.failures, "err", err)
		}
		return
	}
	b.written.Add(uint64(len(items)))
	b.trimmed.Add(uint64(n.Bus + n.Rules + n.Guests + n.Own))
	b.trimmedBus.Add(uint64(n.Bus))
	b.trimmedFirings.Add(uint64(n.Rules + n.Guests))
	b.trimmedGuest.Add(uint64(n.Guests))
}

func (b *Logbook) purge(ctx context.Context) {
	if n, err := b.store.PurgeLog(ctx, b.now().Add(-b.retention)); err != nil && ctx.Err() == nil {
		b.log.Warn("purging the old logbook", "err", err)
	} else if n > 0 {
		b.log.Info("purged the old logbook", "entries", n)
	}
}

// Watch tells the returned channel of every entry added from now on (a
// slow watcher loses entries); call the func to stop.
func (b *Logbook) Watch(buffer int) (<-chan Entry, func()) {
	ch := make(chan Entry, buffer)
	if b == nil {
		return ch, func() {}
	}
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}

// Started reports whether the writer was started.
func (b *Logbook) Started() bool { return b != nil && b.started.Load() }

// Status reports the writer's health.
func (b *Logbook) Status() Status {
	if b == nil {
		return Status{}
	}
	return Status{Written: b.written.Load(), Dropped: b.dropped.Load(), Failed: b.failed.Load(),
		Trimmed: b.trimmed.Load(), TrimmedBus: b.trimmedBus.Load(), TrimmedFirings: b.trimmedFirings.Load(),
		TrimmedGuest: b.trimmedGuest.Load(), DroppedBus: b.droppedBus.Load(), DroppedGuest: b.droppedGuest.Load(),
		Cut: b.cut.Load(), MaxRows: b.cfg.MaxRows}
}

// compact is v's JSON, or fmt.Sprint(v) when it has none.
func compact(v any) string {
	b, err := pilotage.AppendJSON(nil, v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// areaOf is a device's area as the UI groups it: areas match
// case-insensitively.
func areaOf(tags []string) string {
	for _, t := range tags {
		if a, ok := strings.CutPrefix(t, "area:"); ok {
			return strings.ToLower(a)
		}
	}
	return ""
}
