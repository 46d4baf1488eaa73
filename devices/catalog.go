package devices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/ha"
	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/devices/internal/z2m"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// Options configure a Catalog. Zero values get working defaults.
type Options struct {
	Z2MBase  string // Zigbee2MQTT base topic, default "zigbee2mqtt"
	HAPrefix string // Home Assistant discovery prefix, default "homeassistant"
	Notify   []NotifyChannel
	Areas    []AreaRule // configured areas by device id (see AreaRule)
	Logger   *slog.Logger
	Now      func() time.Time
	// IDs persists the device ids discovery assigns (nil: they are first
	// come, first served only while the process runs).
	IDs model.IDRegistry
	// MaxPayload bounds the payload of bridge/devices and bridge/event
	// (0: DefaultMaxPayload); a discovery config or a state is bounded by
	// 256 KiB or MaxPayload when smaller (see limits.go).
	MaxPayload int
	// MaxListExposes bounds the exposes and features a Zigbee2MQTT device
	// list models (0: z2m.MaxListExposes; a test lowers it).
	MaxListExposes int
}

// NotifyChannel is a configured notification target, exposed as an action
// entry of risk external.
type NotifyChannel struct {
	ID    string // catalog id, e.g. "notify.phone"
	Name  string
	Topic string // MQTT topic the message is published to (JSON {"title","message"})
	URL   string // optional HTTP webhook (POST JSON), used when Topic is empty

	// Ntfy is an ntfy topic URL (https://ntfy.sh/<topic>): the message is
	// pushed to the phones subscribed to it, with Priority (min, low,
	// default, high, urgent) and Tags (emoji short codes) unless the call
	// gives its own.
	Ntfy     string
	Priority string
	Tags     []string
}

// Live is a live value served beside an entry; never part of the entry.
type Live = pilotage.Live

// ChangeKind classifies a Change.
type ChangeKind int

// The kinds of changes subscribers see.
const (
	ChangeState ChangeKind = iota + 1
	ChangeEvent
	ChangeAvailability
	ChangeCatalog
)

func (k ChangeKind) String() string {
	switch k {
	case ChangeState:
		return "state"
	case ChangeEvent:
		return "event"
	case ChangeAvailability:
		return "availability"
	case ChangeCatalog:
		return "catalog"
	}
	return "unknown"
}

// Change is one live change. For ChangeCatalog, ID is the entry id and Value
// is "added", "removed" or "modified". For ChangeAvailability, ID is the
// device id and Value the new bool.
type Change struct {
	Kind        ChangeKind
	ID          string
	Value, Prev any
	Time        time.Time
	// Offline: a state change of a device whose availability said it was
	// offline (its value is kept; the rules fire nothing on it).
	Offline bool
	// Topic is the MQTT topic of the message that made a state, event or
	// availability change ("" for a local device's).
	Topic string
	// Retained: the state's message came with the retain flag, the
	// broker's stored copy sent on a new subscription, not a report of
	// now (a first value after a start is then a baseline).
	Retained bool
	// Why says why an availability change made its device offline when
	// no message said so ("no report for 2 s: expire_after").
	Why string
}

// Catalog is the catalog source. All methods are safe for concurrent use.
type Catalog struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	static []string // staticFilters; static and topics never change
	topics struct{ devices, groups, event, info, haPrefix, z2mPrefix string }

	// ingest serialises ingestion (HandleMessage, loadIDs) and the
	// subscribers' dispatch order; the fields from here to mu belong to
	// its holder alone. Readers never take it (see ingest.go).
	ingest  sync.Mutex
	z2m     *z2m.Source
	ha      *ha.Source
	pending map[string][]byte // last payload of topics nobody routes yet (bounded)
	// pendingCopy: the pending topics whose payload came retained (a
	// broker's stored copy: replayed as one, a baseline after a start).
	pendingCopy map[string]bool
	tx          txn                    // the running ingestion
	intern      *model.Interner        // shares equal schemas, tags and texts between entries
	ids         *model.IDTable         // device id assignments
	z2mIDs      map[string]bool        // ids of the Zigbee2MQTT devices (the last list)
	notify      *model.Spec            // the notification channels (built once)
	local       map[string]*model.Spec // the local devices (PutLocal) by id
	work        *model.WorkBudget      // template work per second
	// rebuildLeft: the last paced rebuild left work for bridgeLoop.
	rebuildLeft bool
	// rest: the spec changes a paced rebuild left, good while specGen
	// (commits of spec changes) is restGen.
	rest             []model.SpecChange
	specGen, restGen uint64
	buildLeft        bool // the z2m source has devices to BuildMore
	bridge           bridgeQueue
	overBound        atomic.Int64 // devices of the last list past a bound
	saveMu           sync.Mutex   // orders the id registry's writes (storeIDs)
	// fanout is len(subList), read by ingestion without c.mu to charge
	// what a change costs (model.Rec.Fanout).
	fanout atomic.Int32

	// mu guards the fields below. Ingestion changes them holding c.ingest
	// too, so its compute phase reads the model holding c.ingest alone.
	mu      sync.RWMutex
	model   *routeTable // routing and actions of the current snapshot
	live    map[string]liveVal
	devLive map[string]*devLive
	subs    map[int]func(Change)
	subList []func(Change) // subs by id (listSubs)
	nextSub int
	conn    mqtt.PubSub
	extra   map[string]bool // routed topics outside the static filters, subscribed one by one
	subWake chan struct{}
	// localQ holds the local devices' changes for drainLocal, which
	// runs while localBusy.
	localQ    []Change
	localBusy bool

	snap atomic.Pointer[Snapshot]
	// coverage is model.coverage as of the last commit (Coverage).
	coverage atomic.Pointer[Coverage]
	notices  notifyCounters // what the channels sent and failed to send (own lock)
	refused  model.RefusalCounts
	configs  atomic.Int64 // discovery configs read (ConfigsRead)
	exp      expiries     // expire_after deadlines (under mu; avail.go)
	z2mAvail bool         // Zigbee2MQTT's availability is on (bridge/info; under mu)
}

type liveVal struct {
	value       any
	lastSeen    time.Time
	changed     time.Time // see Live.LastChanged
	first       bool      // see Live.FirstValue
	retained    bool      // see Live.Retained
	unsupported string
	unread      string // why the latest message was not read (Live.Unread)
	dev         string
}

type devLive struct {
	obj      map[string]any
	lastSeen time.Time
	avail    map[string]bool   // availability topic -> available
	availNow *bool             // as last announced (a ChangeAvailability); reads use available()
	latest   bool              // what the last availability message said
	mode     string            // its availability mode: latest, all or any
	declared []string          // the availability topics its spec names (avail.go)
	expires  []string          // its states with expire_after
	expired  map[string]string // those that ran out, or never reported: why
}

// maxPending bounds the cache of payloads on topics nobody routes yet, so
// that a retained state that arrives before its discovery is not lost.
const maxPending = 4096

// maxPendingPayload bounds the size of one cached payload.
const maxPendingPayload = 16 << 10

// maxPendingTopic: a topic longer than any real one is not kept either
// (MQTT allows 64 KiB; 4,096 of those would hold 256 MB).
const maxPendingTopic = 1 << 10

// NewCatalog builds an empty catalog (with the notification channels).
func NewCatalog(o Options) *Catalog {
	if o.Z2MBase == "" {
		o.Z2MBase = "zigbee2mqtt"
	}
	if o.HAPrefix == "" {
		o.HAPrefix = "homeassistant"
	}
	o.Z2MBase = strings.TrimSuffix(o.Z2MBase, "/")
	o.HAPrefix = strings.TrimSuffix(o.HAPrefix, "/")
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.MaxListExposes <= 0 {
		o.MaxListExposes = z2m.MaxListExposes
	}
	in := model.NewInterner()
	log := slog.New(throttled(o.Logger.Handler(), o.Now)).With("component", "devices")
	ids := model.NewIDTable(log, o.Now)
	c := &Catalog{
		opts:    o,
		log:     log,
		now:     o.Now,
		z2m:     z2m.NewSource(o.Z2MBase, in, o.Areas, o.MaxListExposes),
		ha:      ha.NewSource(o.HAPrefix, in, ids, o.Areas),
		live:    map[string]liveVal{},
		devLive: map[string]*devLive{},
		pending: map[string][]byte{}, pendingCopy: map[string]bool{},
		local:   map[string]*model.Spec{},
		subs:    map[int]func(Change){},
		extra:   map[string]bool{},
		subWake: make(chan struct{}, 1),
		bridge:  bridgeQueue{wake: make(chan struct{}, 1)},
		intern:  in,
		ids:     ids,
		work:    model.NewWorkBudget(),
		exp:     expiries{due: map[expKey]expDue{}},
	}
	c.notices.log = c.log
	c.static = c.staticFilters()
	c.topics.devices = o.Z2MBase + "/bridge/devices"
	c.topics.groups = o.Z2MBase + "/bridge/groups"
	c.topics.event = o.Z2MBase + "/bridge/event"
	c.topics.info = o.Z2MBase + "/bridge/info"
	c.topics.haPrefix = o.HAPrefix + "/"
	c.topics.z2mPrefix = o.Z2MBase + "/"
	c.model = newRouteTable(o.Z2MBase, o.HAPrefix)
	c.snap.Store(emptySnapshot())
	tx := c.begin()
	tx.specs = c.rebuildSpecs(tx)
	c.commitPhase(tx)
	tx.end()
	return c
}

// Start loads the persisted device ids (Options.IDs), subscribes what
// discovery and state need on conn (see staticFilters) and keeps conn for
// Call. The topics discovery points to outside those filters are
// subscribed, and unsubscribed when gone, by a goroutine that stops when
// ctx is done.
func (c *Catalog) Start(ctx context.Context, conn mqtt.PubSub) error {
	c.mu.Lock()
	if c.conn != nil {
		c.mu.Unlock()
		return errors.New("devices: catalog already started")
	}
	c.conn = conn
	c.mu.Unlock()
	if err := c.loadIDs(ctx); err != nil {
		return fmt.Errorf("devices: loading the device id registry: %w", err)
	}
	// Discovery configs at QoS 0, as Home Assistant subscribes them: they
	// are retained and sent again at every subscribe, and a stock
	// Mosquitto drops what a subscribe's QoS 1 burst has beyond 1,020
	// (max_inflight_messages + max_queued_messages).
	c.startBridge(ctx)
	ds, err := mqtt.SubscribeSet(conn, 0, c.deliver)
	if err == nil {
		err = ds.Set(c.discoveryFilters())
	}
	if err != nil {
		return fmt.Errorf("devices: subscribe: %w", err)
	}
	// The rest at QoS 1: a broker keeps what QoS 1 publishers send while a
	// persistent session is away, and delivers it on reconnect.
	fs, err := mqtt.SubscribeSet(conn, 1, c.deliver)
	if err != nil {
		return fmt.Errorf("devices: subscribe: %w", err)
	}
	c.mu.RLock()
	want := c.wantLocked()
	c.mu.RUnlock()
	if err := fs.Set(want); err != nil {
		return fmt.Errorf("devices: subscribe: %w", err)
	}
	go c.subscriber(ctx, fs, want)
	return nil
}

// staticFilters are the catalog's filters whatever the devices: the
// Zigbee2MQTT bridge's device list and events, every device's state,
// availability and action topic (a friendly name without "/"), and Home
// Assistant discovery configs. None matches a command (<base>/<name>/set,
// /get, ...): the catalog never receives the commands it publishes, nor
// anyone else's. Topics discovery points to outside them (names with "/",
// Home Assistant state topics) are subscribed one by one.
func (c *Catalog) staticFilters() []string {
	b := c.opts.Z2MBase
	return append([]string{b + "/bridge/devices", b + "/bridge/groups", b + "/bridge/event", b + "/bridge/info", b + "/+", b + "/+/availability", b + "/+/action"},
		c.discoveryFilters()...)
}

// discoveryFilters are the Home Assistant discovery configs' filters,
// subscribed apart at QoS 0 (see Start).
func (c *Catalog) discoveryFilters() []string {
	p := c.opts.HAPrefix
	return []string{p + "/+/+/config", p + "/+/+/+/config"}
}

// wantLocked is the subscription's filters, sorted: the static ones and
// the routed topics they do not cover.
func (c *Catalog) wantLocked() []string {
	want := slices.DeleteFunc(slices.Clone(c.static), func(f string) bool { return slices.Contains(c.discoveryFilters(), f) })
	for t := range c.extra {
		want = append(want, t)
	}
	slices.Sort(want)
	return want
}

// staticCovers reports whether a static filter matches topic t.
func (c *Catalog) staticCovers(t string) bool {
	return slices.ContainsFunc(c.static, func(f string) bool { return mqtt.TopicMatch(f, t) })
}

// subscriber keeps the subscription's filters those of the last rebuild.
// It runs on its own goroutine because Set waits for the broker, which
// delivers retained messages to HandleMessage meanwhile.
func (c *Catalog) subscriber(ctx context.Context, fs mqtt.Filters, have []string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.subWake:
		}
		c.mu.RLock()
		want := c.wantLocked()
		c.mu.RUnlock()
		if slices.Equal(want, have) {
			continue
		}
		if err := fs.Set(want); err != nil {
			c.log.Warn("subscribe state topics", "err", err) // retried after the next discovery change
		}
		have = want
	}
}

func (c *Catalog) wakeSubscriber() {
	select {
	case c.subWake <- struct{}{}:
	default:
	}
}

// Subscribe registers fn for every live change. fn runs synchronously on the
// ingestion goroutine after the state lock is released: it may read the
// catalog but must not call HandleMessage, and must be fast.
func (c *Catalog) Subscribe(fn func(Change)) (cancel func()) {
	c.mu.Lock()
	id := c.nextSub
	c.nextSub++
	c.subs[id] = fn
	c.listSubs()
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.subs, id)
			c.listSubs()
			c.mu.Unlock()
		})
	}
}

// Snapshot returns the current immutable snapshot.
func (c *Catalog) Snapshot() *Snapshot { return c.snap.Load() }

// Live returns the live value of a state id, or the whole state object of a
// device id. Event and action ids have no live value.
func (c *Catalog) Live(id string) (Live, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	snap := c.snap.Load()
	if d, ok := c.devLive[id]; ok {
		if _, known := snap.Get(id); known {
			obj := make(map[string]any, len(d.obj))
			for k, v := range d.obj {
				obj[k] = v
			}
			return Live{Value: obj, Available: d.available(), LastSeen: d.lastSeen}, true
		}
	}
	e, known := snap.Get(id)
	if !known || e.Kind == pilotage.KindAction {
		return Live{}, false
	}
	out := Live{Unsupported: c.model.unsupported[id]}
	if lv, ok := c.live[id]; ok {
		out.Value, out.LastSeen, out.LastChanged, out.FirstValue = lv.value, lv.lastSeen, lv.changed, lv.first
		out.Unread, out.Retained = lv.unread, lv.retained
	}
	if d, ok := c.devLive[c.model.devOf[id]]; ok {
		out.Available = d.available()
	}
	return out, true
}

// DeviceOf returns the id of the device a state or event entry belongs
// to (its availability is that device's).
func (c *Catalog) DeviceOf(id string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.model.devOf[id]
	return d, ok && d != ""
}

// RestoreChanged settles when the first value this process saw of a
// state changed, from a record that outlived a restart: the state held
// value since at. It applies only while the live value is still that
// first one and equal to value; either way the first value is settled
// (a later call changes nothing). It reports whether LastChanged moved.
func (c *Catalog) RestoreChanged(id string, value any, at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lv, ok := c.live[id]
	if !ok || !lv.first {
		return false
	}
	lv.first = false
	moved := model.EqualValues(lv.value, value) && at.Before(lv.changed)
	if moved {
		lv.changed = at
	}
	c.live[id] = lv
	return moved
}

// StateIDsForAction maps each argument key of an action to the state id it
// affects (for simulated effects in test runs).
func (c *Catalog) StateIDsForAction(actionID string) map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.model.actions[actionID]
	if !ok {
		return nil
	}
	out := make(map[string]string, len(a.Affects))
	for k, v := range a.Affects {
		out[k] = v
	}
	return out
}

// listSubs recomputes subList, the subscribers in subscription order. It
// is replaced, never changed in place, so a finished transaction may use
// it after the lock is released.
func (c *Catalog) listSubs() {
	ids := make([]int, 0, len(c.subs))
	for id := range c.subs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]func(Change), len(ids))
	for i, id := range ids {
		out[i] = c.subs[id]
	}
	c.subList = out
	c.fanout.Store(int32(len(out)))
}
