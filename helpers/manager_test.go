package helpers

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/cause"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// house is a catalog and a manager over a store, as the server makes
// them; restart makes both again over the same store.
type house struct {
	t     *testing.T
	store *storage.Store
	cat   *devices.Catalog
	m     *Manager
	mu    sync.Mutex
	notes []string
	// causes is each note's cause, as notes.
	causes []cause.Cause
	now    func() time.Time
}

func newHouse(t *testing.T, dir string, now func() time.Time, config ...Def) *house {
	t.Helper()
	return newHouseWatching(t, dir, now, nil, config...)
}

func (h *house) close() {
	h.m.Close()
	_ = h.store.Close()
}

func (h *house) live(id string) any {
	l, _ := h.cat.Live(id)
	return l.Value
}

func (h *house) call(id string, args map[string]any) error {
	return h.cat.Call(context.Background(), id, args)
}

func (h *house) noted(part string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// TestCatalogEntries: a helper is a device of type helper with exact
// schemas, control-risk actions in its area, and its actions go through
// the catalog's Call like a device's.
func TestCatalogEntries(t *testing.T) {
	h := newHouse(t, t.TempDir(), time.Now, Def{ID: "target", Kind: Number, Min: fp(5), Max: fp(30), Step: fp(0.5), Unit: "°C", Area: "living"})
	snap := h.cat.Snapshot()
	dev, ok := snap.Get("target")
	if !ok || dev.Kind != pilotage.KindDevice || !hasTag(dev.Tags, "type:helper") || !hasTag(dev.Tags, "area:living") {
		t.Fatalf("device entry: %+v", dev)
	}
	st, _ := snap.Get("target.state")
	var sch map[string]any
	_ = json.Unmarshal(st.OutputSchema, &sch)
	if sch["type"] != "number" || sch["minimum"] != 5.0 || sch["maximum"] != 30.0 || sch["x-unit"] != "°C" || !hasTag(st.Tags, "area:living") {
		t.Fatalf("state entry: %s %v", st.OutputSchema, st.Tags)
	}
	set, _ := snap.Get("target.set")
	if set == nil || set.Risk != pilotage.RiskControl || !set.Callable || !strings.Contains(string(set.InputSchema), `"required":["value"]`) {
		t.Fatalf("action entry: %+v", set)
	}
	if got := h.live("target.state"); got != 5.0 {
		t.Fatalf("initial value %v, want the min", got)
	}
	if err := h.call("target.set", map[string]any{"value": 21}); err != nil {
		t.Fatal(err)
	}
	if got := h.live("target.state"); got != 21.0 {
		t.Fatalf("after set: %v", got)
	}
	err := h.call("target.set", map[string]any{"value": 40})
	if err == nil || !strings.Contains(err.Error(), "above its max 30") || h.live("target.state") != 21.0 {
		t.Fatalf("set 40: %v, value %v", err, h.live("target.state"))
	}
	if err := h.cat.CheckArgs("target.increment", map[string]any{"by": 2}); err == nil {
		t.Fatal("an argument increment does not take was admitted")
	}
}

// TestClassTagOnTheState: a helper tagged with a class (a flag standing
// for someone's presence) carries it on its state too, where a selector
// by the state's own tag ({tag: 'class:occupancy'}) finds it beside real
// sensors; other tags stay the device's.
func TestClassTagOnTheState(t *testing.T) {
	h := newHouse(t, t.TempDir(), time.Now, Def{ID: "someone_in_garage", Kind: Flag, Area: "garage", Tags: []string{"class:occupancy", "manual"}})
	st, ok := h.cat.Snapshot().Get("someone_in_garage.state")
	if !ok || !hasTag(st.Tags, "class:occupancy") || hasTag(st.Tags, "manual") {
		t.Fatalf("state entry tags: %v", st.Tags)
	}
}

func hasTag(tags []string, tag string) bool {
	for _, x := range tags {
		if x == tag {
			return true
		}
	}
	return false
}

// TestRestart: values, definitions made over the API and a running
// timer's end survive a restart; a timer that ended while the server was
// down finishes at start, fires finished and says so in the logbook.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	h := newHouse(t, dir, now, Def{ID: "vacation_mode", Kind: Flag})
	ctx := context.Background()
	for _, d := range []Def{{ID: "tea", Kind: Timer, Duration: "PT1H"}, {ID: "bread", Kind: Timer, Duration: "PT2H"}, {ID: "mode", Kind: Choice, Options: []string{"a", "b"}}} {
		if _, err := h.m.Put(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		id   string
		args map[string]any
	}{{"vacation_mode.turn_on", nil}, {"tea.start", nil}, {"bread.start", nil}, {"mode.select", map[string]any{"option": "b"}}} {
		if err := h.call(c.id, c.args); err != nil {
			t.Fatal(c.id, err)
		}
	}
	h.close()

	// Down for 90 minutes: tea (1 h) ended meanwhile, bread (2 h) did not.
	mu.Lock()
	clock = clock.Add(90 * time.Minute)
	mu.Unlock()
	var events []string
	var evMu sync.Mutex
	h2 := newHouseWatching(t, dir, now, func(c devices.Change) {
		if c.Kind == devices.ChangeEvent {
			evMu.Lock()
			events = append(events, c.ID)
			evMu.Unlock()
		}
	}, Def{ID: "vacation_mode", Kind: Flag})
	if v := h2.live("vacation_mode.state"); v != true {
		t.Errorf("vacation_mode after restart: %v", v)
	}
	if v := h2.live("mode.state"); v != "b" {
		t.Errorf("mode after restart: %v", v)
	}
	if v := h2.live("tea.state"); v != TimerIdle || !h2.noted("tea: finished while Pilothouse was not running") {
		t.Errorf("tea after restart: %v; notes %v", v, h2.notes)
	}
	testutil.Eventually(t, 10*time.Second, "tea.finished fired", func() bool {
		evMu.Lock()
		defer evMu.Unlock()
		return len(events) == 1 && events[0] == "tea.finished"
	})
	want := time.Date(2026, 12, 6, 14, 0, 0, 0, time.UTC)
	if v := h2.live("bread.state"); v != TimerActive || h2.live("bread.finishes_at") != want.Format(time.RFC3339Nano) {
		t.Errorf("bread after restart: %v until %v", v, h2.live("bread.finishes_at"))
	}
}

// newHouseWatching is newHouse with fn subscribed to the catalog before
// the helpers start.
func newHouseWatching(t *testing.T, dir string, now func() time.Time, fn func(devices.Change), config ...Def) *house {
	t.Helper()
	st, err := storage.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	h := &house{t: t, store: st, cat: devices.NewCatalog(devices.Options{}), now: now}
	if fn != nil {
		h.cat.Subscribe(fn)
	}
	h.m = New(Options{Catalog: h.cat, Store: st, Now: now, Note: func(c cause.Cause, dev, area, text string) {
		h.mu.Lock()
		h.notes = append(h.notes, text)
		h.causes = append(h.causes, c)
		h.mu.Unlock()
	}})
	if err := h.m.Start(context.Background(), config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}

// TestTimerEnds: a started timer ends on its own, fires finished and is
// idle again; a cancelled one fires cancelled and never finishes.
func TestTimerEnds(t *testing.T) {
	var mu sync.Mutex
	var events []string
	h := newHouseWatching(t, t.TempDir(), time.Now, func(c devices.Change) {
		if c.Kind == devices.ChangeEvent {
			mu.Lock()
			events = append(events, c.ID)
			mu.Unlock()
		}
	}, Def{ID: "egg", Kind: Timer, Duration: "PT1S"}, Def{ID: "tea", Kind: Timer, Duration: "PT1S"})
	if err := h.call("egg.start", nil); err != nil {
		t.Fatal(err)
	}
	if err := h.call("tea.start", map[string]any{"duration": "PT1H"}); err != nil {
		t.Fatal(err)
	}
	if err := h.call("tea.cancel", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "egg finished", func() bool { return h.live("egg.state") == TimerIdle })
	testutil.Eventually(t, 10*time.Second, "both events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(events, ",") == "tea.cancelled,egg.finished"
	})
	if h.live("tea.state") != TimerIdle || !h.noted("egg: active → idle, finished (its time was up)") {
		t.Fatalf("tea %v; notes %v", h.live("tea.state"), h.notes)
	}
}

// TestConfigNeverDestroysAUserHelper: a configuration file whose helper
// takes the id of one made over MCP or the web UI leaves that one as it
// is, and a helper the file drops goes with a logbook line saying so.
func TestConfigNeverDestroysAUserHelper(t *testing.T) {
	dir := t.TempDir()
	now := time.Now
	h := newHouse(t, dir, now, Def{ID: "vacation_mode", Kind: Flag})
	if _, err := h.m.Put(context.Background(), Def{ID: "guest_mode", Kind: Flag, Area: "living"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"guest_mode.turn_on", "vacation_mode.turn_on"} {
		if err := h.call(id, nil); err != nil {
			t.Fatal(id, err)
		}
	}
	h.close()

	h2 := newHouse(t, dir, now, Def{ID: "guest_mode", Kind: Number, Min: fp(0), Max: fp(10)})
	if v := h2.live("guest_mode.state"); v != true {
		t.Errorf("the user's guest_mode after a file took its id: %v", v)
	}
	if !h2.noted("vacation_mode: removed, in neither the configuration file nor the demo house now (its state was true)") {
		t.Errorf("no logbook line for the dropped helper: %v", h2.notes)
	}
	if u := h2.m.Unserved(); len(u) != 1 || !strings.Contains(u[0], "the configuration file's helpers[0] (guest_mode) is not served: a helper made over MCP") {
		t.Errorf("the file's guest_mode not said unserved: %q", u)
	}
	h2.close()

	h3 := newHouse(t, dir, now)
	if v := h3.live("guest_mode.state"); v != true {
		t.Errorf("the user's guest_mode once the file no longer names it: %v", v)
	}
}

// TestHelperOnADevicesIDIsSaid: a file's helper whose id a device from
// the bus holds is not served, and says so (for /healthz and every page),
// rather than sharing the id with the device.
func TestHelperOnADevicesIDIsSaid(t *testing.T) {
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cat := devices.NewCatalog(devices.Options{})
	cat.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: devices.SyntheticZ2MHouse(1, 1)})
	m := New(Options{Catalog: cat, Store: st, Now: time.Now, Note: func(cause.Cause, string, string, string) {}})
	defer m.Close()
	if err := m.Start(t.Context(), []Def{{ID: "bench_sensor_0", Kind: Flag}, {ID: "guest_mode", Kind: Flag}}); err != nil {
		t.Fatal(err)
	}
	u := m.Unserved()
	if len(u) != 1 || !strings.Contains(u[0], `helper bench_sensor_0 is not served: `) || !strings.Contains(u[0], `"bench_sensor_0" is a device`) {
		t.Fatalf("unserved %q", u)
	}
	if e, ok := cat.Snapshot().Get("bench_sensor_0"); !ok || slices.Contains(e.Tags, "type:helper") {
		t.Fatalf("the device lost its id: %+v", e)
	}
	if _, ok := cat.Snapshot().Get("guest_mode.turn_on"); !ok {
		t.Fatal("the other helper is not served")
	}
}

// TestNoteCause: a change made through the catalog with a rule's cause on
// the context is noted with it (the logbook files it as that principal's);
// a change with none is noted with none, and a timer's end with its
// start's (attacker round 20: a guest's timer ended in the devices'
// share).
func TestNoteCause(t *testing.T) {
	h := newHouse(t, t.TempDir(), time.Now, Def{ID: "away", Kind: Flag}, Def{ID: "egg", Kind: Timer, Duration: "PT1S"})
	ruled := cause.With(context.Background(), "guest", "loop")
	for _, c := range []struct {
		ctx context.Context
		id  string
	}{{ruled, "away.toggle"}, {context.Background(), "away.toggle"}, {ruled, "egg.start"}} {
		if err := h.cat.Call(c.ctx, c.id, nil); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 15*time.Second, "the timer's end noted", func() bool { return h.noted("its time was up") })
	h.mu.Lock()
	defer h.mu.Unlock()
	want := []cause.Cause{{Who: "guest", Rule: "loop"}, {}, {Who: "guest", Rule: "loop"}, {Who: "guest", Rule: "loop"}}
	if !slices.Equal(h.causes, want) {
		t.Errorf("causes %+v of notes %q, want %+v", h.causes, h.notes, want)
	}
}

// TestTimerStarterSurvivesRestart: who started a timer is stored with it:
// a timer that ended while the server was down, and one that ends after
// the restart, are noted with their start's cause; a timer started by no
// rule ends with none.
func TestTimerStarterSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	timers := []Def{{ID: "tea", Kind: Timer, Duration: "PT1H"}, {ID: "bread", Kind: Timer, Duration: "PT2H"}, {ID: "egg", Kind: Timer, Duration: "PT1H"}}
	h := newHouse(t, dir, now, timers...)
	ruled := cause.With(context.Background(), "guest", "kitchen")
	for _, c := range []struct {
		ctx context.Context
		id  string
	}{{ruled, "tea.start"}, {ruled, "bread.start"}, {context.Background(), "egg.start"}} {
		if err := h.cat.Call(c.ctx, c.id, nil); err != nil {
			t.Fatal(c.id, err)
		}
	}
	h.close()
	mu.Lock()
	clock = clock.Add(90 * time.Minute) // tea and egg ended while down
	mu.Unlock()
	h2 := newHouse(t, dir, now, timers...)
	h2.m.mu.Lock()
	bread, gen := h2.m.byID["bread"], h2.m.byID["bread"].gen
	h2.m.mu.Unlock()
	h2.m.expire(bread, gen) // its time is up
	h2.mu.Lock()
	defer h2.mu.Unlock()
	got := map[string]cause.Cause{}
	for i, n := range h2.notes {
		got[n[:strings.IndexByte(n, ':')]] = h2.causes[i]
	}
	want := map[string]cause.Cause{"tea": {Who: "guest", Rule: "kitchen"}, "bread": {Who: "guest", Rule: "kitchen"}, "egg": {}}
	if !maps.Equal(got, want) {
		t.Errorf("the ends' causes %+v (notes %q), want %+v", got, h2.notes, want)
	}
	if v := h2.live("bread.state"); v != TimerIdle {
		t.Errorf("bread %v, want idle", v)
	}
}
