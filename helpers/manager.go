package helpers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/cause"
	"github.com/pilothouse/pilothouse/storage"
)

// Where a helper was made.
const (
	SourceConfig = "config" // the configuration file: changed there only
	SourceAPI    = "api"    // MCP or the web UI
)

// DefaultMaxHelpers bounds the helpers of a house.
const DefaultMaxHelpers = 1000

// Catalog is what the manager needs of the live catalog (devices.Catalog).
type Catalog interface {
	PutLocal(d devices.LocalDevice, values map[string]any) error
	RemoveLocal(id string)
	SetLocal(id string, v any)
	FireLocal(id string, v any)
}

// Store is what the manager needs of storage (storage.Store).
type Store interface {
	LoadHelpers(ctx context.Context) ([]storage.Helper, error)
	PutHelper(ctx context.Context, h storage.Helper) error
	SetHelperValue(ctx context.Context, id, value string) error
	DeleteHelper(ctx context.Context, id string) error
}

// Options configure a Manager.
type Options struct {
	Catalog Catalog
	Store   Store // nil: values live only while the process runs
	Log     *slog.Logger
	Now     func() time.Time
	// Note writes a logbook entry about helper device (in area), caused
	// by c (zero: by no principal, e.g. a timer or the configuration).
	Note func(c cause.Cause, device, area, text string)
	Max  int // helpers at most (0: DefaultMaxHelpers)
}

// Manager owns the helpers: definitions, values, timers, persistence,
// and their entries in the catalog.
type Manager struct {
	o Options
	// admin serialises Start, Put and Delete, which wait for the
	// catalog's ingestion (PutLocal): never called holding mu, which
	// actions take from a rule fired by that ingestion.
	admin sync.Mutex
	mu    sync.Mutex
	byID  map[string]*helper
	// unserved says what the start could not serve and why, for /healthz
	// and every page (a log line scrolls away).
	unserved map[string]string
}

type helper struct {
	def    Def
	source string
	demo   bool // one of the defaults (the demo house's), served as the file's
	value  Value
	timer  *time.Timer
	gen    int // bumped whenever the timer is rescheduled
	// by started a timer that is active or paused: its finish is theirs
	// (startedby.go).
	by cause.Cause
}

// Info is a helper as listed: definition, origin and value.
type Info struct {
	Def    Def    `json:"def"`
	Source string `json:"source"`
	Demo   bool   `json:"demo,omitempty"` // a default the demo house adds, not in the file
	Value  Value  `json:"value"`
}

// ErrNotFound: no helper of that id.
var ErrNotFound = errors.New("no such helper")

// ErrConfigured: the helper is the configuration file's to change.
var ErrConfigured = errors.New("defined in the configuration file: change it there")

// ErrDemo: the helper is the demo house's; it goes when the demo is off.
var ErrDemo = errors.New("the demo house's helper: it goes when the demo is off (make one of the same id, over MCP's update or the web UI, to replace it)")

// New makes a manager; Start loads and serves the helpers.
func New(o Options) *Manager {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Max <= 0 {
		o.Max = DefaultMaxHelpers
	}
	if o.Note == nil {
		o.Note = func(cause.Cause, string, string, string) {}
	}
	return &Manager{o: o, byID: map[string]*helper{}, unserved: map[string]string{}}
}

// Get returns one helper.
func (m *Manager) Get(id string) (Info, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.byID[id]
	if h == nil {
		return Info{}, false
	}
	return h.info(), true
}

// List returns every helper, by id.
func (m *Manager) List() []Info {
	m.mu.Lock()
	out := make([]Info, 0, len(m.byID))
	for _, h := range m.byID {
		out = append(out, h.info())
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Def.ID < out[j].Def.ID })
	return out
}

func (h *helper) info() Info {
	v := Value{}
	for k, x := range h.value {
		v[k] = x
	}
	return Info{Def: h.def, Source: h.source, Demo: h.demo, Value: v}
}

// Act carries out a helper's action (id <helper>.<verb>): the value is
// stored first, then served; a refusal changes nothing and says why.
func (m *Manager) Act(ctx context.Context, actionID string, args map[string]any) error {
	id, verb, _ := cut(actionID)
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.byID[id]
	if h == nil {
		return fmt.Errorf("helpers: %s: %w", actionID, ErrNotFound)
	}
	out, err := h.def.apply(h.value, verb, args, m.o.Now())
	if err != nil {
		return fmt.Errorf("helpers: %w", err)
	}
	c := cause.Of(ctx)
	if err := m.storeValue(ctx, id, out.value, startedBy(&h.def, out.value, c)); err != nil {
		return err
	}
	m.commitLocked(h, out, actionID, c)
	return nil
}

// cut splits "<helper>.<verb>".
func cut(id string) (string, string, bool) {
	i := strings.LastIndexByte(id, '.')
	if i < 0 {
		return id, "", false
	}
	return id[:i], id[i+1:], true
}

// storeValue stores helper id's value v, started by by.
func (m *Manager) storeValue(ctx context.Context, id string, v Value, by cause.Cause) error {
	if m.o.Store == nil {
		return nil
	}
	b, err := encodeValue(v, by)
	if err != nil {
		return fmt.Errorf("helpers: %s: encode: %w", id, err)
	}
	if err := m.o.Store.SetHelperValue(context.WithoutCancel(ctx), id, string(b)); err != nil {
		return fmt.Errorf("helpers: %s: the value could not be stored, nothing changed: %w", id, err)
	}
	return nil
}

// commitLocked makes out the helper's value: the catalog serves it, the
// logbook says what changed and why (c caused it), the timer follows
// (m.mu held).
func (m *Manager) commitLocked(h *helper, out outcome, because string, c cause.Cause) {
	id := h.def.ID
	h.by = startedBy(&h.def, out.value, c)
	var said []string
	for _, k := range sortedKeys(out.value) {
		if v, ok := h.value[k]; ok && equal(v, out.value[k]) {
			continue
		}
		m.o.Catalog.SetLocal(id+"."+k, out.value[k])
		if k == "state" {
			said = append(said, plain(h.value[k])+" → "+plain(out.value[k]))
		}
	}
	h.value = out.value
	if out.event != "" {
		m.o.Catalog.FireLocal(id+"."+out.event, out.event)
		said = append(said, out.event)
	}
	if len(said) > 0 {
		m.o.Note(c, id, h.def.Area, id+": "+strings.Join(said, ", ")+" ("+because+")")
	}
	m.scheduleLocked(h)
}

// plain is a value as the logbook says it: a text without its quotes.
func plain(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return show(v)
}

func sortedKeys(v Value) []string {
	out := make([]string, 0, len(v))
	for k := range v {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// scheduleLocked arms an active timer's finish, and disarms any other.
func (m *Manager) scheduleLocked(h *helper) {
	stopLocked(h)
	at := finishesAt(h.value)
	if h.def.Kind != Timer || at.IsZero() {
		return
	}
	gen := h.gen
	h.timer = time.AfterFunc(at.Sub(m.o.Now()), func() { m.expire(h, gen) })
}

// stopLocked disarms h's timer; one already firing finds gen moved.
func stopLocked(h *helper) {
	h.gen++
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

// expire finishes a timer whose time is up (unless it changed since).
func (m *Manager) expire(h *helper, gen int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := h.def.ID
	if m.byID[id] != h || h.gen != gen {
		return
	}
	out, err := h.def.apply(h.value, "finish", nil, m.o.Now())
	if err != nil {
		m.o.Log.Error("a timer could not finish", "helper", id, "err", err)
		return
	}
	if err := m.storeValue(context.Background(), id, out.value, cause.Cause{}); err != nil {
		// Served as finished all the same: a timer that never ends is
		// worse than one whose end is not on disk.
		m.o.Log.Error("a timer's end could not be stored", "helper", id, "err", err)
	}
	m.commitLocked(h, out, "its time was up", h.by)
}

// Close stops the timers.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range m.byID {
		stopLocked(h)
	}
}

// Simulate predicts a helper action's effect for a test run, whose world
// is read through state at the virtual now: the helper's states that
// change (state id → value), what follows on its own (later: the event a
// finish or cancel fires now, the end of a timer it starts), or the error
// the real call would give. handled is false for an action of no helper.
// Nothing is stored, served or fired.
func (m *Manager) Simulate(actionID string, args map[string]any, now time.Time, state func(string) (any, bool)) (changes map[string]any, later []SimLater, handled bool, err error) {
	id, verb, ok := cut(actionID)
	if !ok {
		return nil, nil, false, nil
	}
	m.mu.Lock()
	h := m.byID[id]
	var d Def
	var cur Value
	if h != nil {
		d, cur = h.def, h.info().Value
	}
	m.mu.Unlock()
	if h == nil {
		return nil, nil, false, nil
	}
	for k := range cur {
		if v, ok := state(id + "." + k); ok {
			cur[k] = v
		}
	}
	out, err := d.apply(cur, verb, args, now)
	if err != nil {
		return nil, nil, true, fmt.Errorf("helpers: %w", err)
	}
	changes = diffValues(id, cur, out.value)
	if out.event != "" {
		later = append(later, SimLater{At: now, Event: map[string]any{id + "." + out.event: out.event}})
	}
	if end := finishesAt(out.value); d.Kind == Timer && !end.IsZero() {
		// The timer ends then unless cancelled, paused or started again
		// (each changes finishes_at).
		fin, _ := d.apply(out.value, "finish", nil, end)
		later = append(later, SimLater{At: end, If: map[string]any{id + ".finishes_at": out.value["finishes_at"]},
			State: diffValues(id, out.value, fin.value), Event: map[string]any{id + ".finished": fin.event}})
	}
	return changes, later, true, nil
}

// SimLater is what a simulated helper action makes happen on its own on
// a test run's clock (rules.Later).
type SimLater struct {
	At               time.Time
	If, State, Event map[string]any
}

// diffValues lists the states of helper id whose value differs from cur
// in next (state id → new value).
func diffValues(id string, cur, next Value) map[string]any {
	changes := map[string]any{}
	for k, v := range next {
		if !equal(cur[k], v) {
			changes[id+"."+k] = v
		}
	}
	return changes
}

// Unserved lists the helpers the start could not serve, each with why.
func (m *Manager) Unserved() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.unserved))
	for _, said := range m.unserved {
		out = append(out, said)
	}
	sort.Strings(out)
	return out
}

// notServed notes what the start could not serve, under key: a helper's
// id, which serving it later clears, or a file's item, which stays.
func (m *Manager) notServed(key, said string) {
	m.mu.Lock()
	m.unserved[key] = said
	m.mu.Unlock()
}
