package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Behaviours taken from Home Assistant's own test suite, ported to
// automation/1 and run against the real server: deployed over MCP, driven
// by MQTT messages from the demo house, each firing's outcome compared
// with what Home Assistant's test asserts, and each test_run prediction
// with the real firing. docs/porting.md records the counts.

// Classes of a behaviour.
const (
	haSame      = "same"            // automation/1 does what Home Assistant does
	haDifferent = "different"       // it does something else, on purpose (the porting guide says why)
	haCannot    = "not expressible" // automation/1 cannot write it

	haNone = "none" // Home Assistant's outcome: no firing
)

// haAct is one thing done to the house: a state change of a demo device,
// a remote press, the weather station's availability, a deploy of the
// same or a changed program, a move of the simulated clock, or letting
// time pass.
type haAct struct {
	dev, prop string
	val       any
	press     string
	avail     string
	redeploy  string // "same", or a changed program
	clock     string // RFC 3339: the clock reads this from now on (the sun house only)
	pass      time.Duration
	started   bool // wait until the rule's first firing is recorded (running)
}

func haSet(dev, prop string, v any) haAct { return haAct{dev: dev, prop: prop, val: v} }
func haPress(action string) haAct         { return haAct{press: action} }
func haPass(d time.Duration) haAct        { return haAct{pass: d} }
func haClock(at time.Time) haAct          { return haAct{clock: at.Format(time.RFC3339)} }
func haAvail(payload string) haAct        { return haAct{avail: payload} }
func haRedeploy(program string) haAct     { return haAct{redeploy: program} }
func haMode(mode string) haAct            { return haSet("living_thermostat", "system_mode", mode) }
func haMotion(on bool) haAct              { return haSet("hall_motion", "occupancy", on) }
func haPower(w float64) haAct             { return haSet("living_plug", "power", w) }
func haDoor(closed bool) haAct            { return haSet("front_door", "contact", closed) }

// haStarted waits for the rule's first firing to be recorded: a body that
// waits is recorded as running when it starts.
var haStarted = haAct{started: true}

// haBehaviour is one behaviour: where it comes from, its class (and what
// differs, or why it cannot be written), the house it runs in, the
// program, what is done before the deploy, after it, and once the firings
// ended, and the outcome: the sorted statuses of the rule's firings (want;
// "" = none), what the first firing's trace must contain (out), and Home
// Assistant's statuses when they differ (ha). scenario is the test run
// that predicts the first firing ("" = the firing is not one activation a
// scenario can describe). In a program "AT_SOON" is a time of day 5 s
// ahead, in a scenario "NOW_SOON" the same instant.
type haBehaviour struct {
	from, class, note string
	house             int // houseTriggers, houseScripts or houseSun
	program           string
	before, drive     []haAct
	after             []haAct
	want, out, ha     string
	scenario          string
}

// The houses behaviours run in, in parallel: one for triggers, one for
// conditions, scripts and lifecycle, one whose clock a behaviour sets
// (Europe/Berlin at the demo's example location, for sun and time).
const (
	houseTriggers = iota
	houseScripts
	houseSun
	houses
)

// TestHomeAssistantParity runs every behaviour of haBehaviours against
// the real server, logs the counts, and fails when a behaviour marked same
// (or different, as documented) does not do what the table says, or when a
// test run's prediction differs from the real firing.
func TestHomeAssistantParity(t *testing.T) {
	all := haBehaviours(t)
	counts := map[string]int{}
	for _, b := range all {
		counts[b.class]++
	}
	t.Logf("%d behaviours from Home Assistant's tests: %d same, %d different, %d not expressible",
		len(all), counts[haSame], counts[haDifferent], counts[haCannot])
	if len(all) < 30 {
		t.Fatalf("%d behaviours, want at least 30", len(all))
	}
	var tally predictions
	t.Cleanup(func() {
		t.Logf("%d test-run predictions compared with the real firing: %d agree", tally.compared.Load(), tally.agreed.Load())
	})
	for house := range houses {
		t.Run(fmt.Sprintf("house %d", house), func(t *testing.T) {
			t.Parallel()
			h := newParityHouse(t, house == houseSun)
			h.tally = &tally
			for i, b := range all {
				if b.house == house && b.class != haCannot {
					t.Run(b.from, func(t *testing.T) { h.check(t, fmt.Sprintf("ha-%02d", i), b) })
				}
			}
		})
	}
}

// predictions counts the test runs compared with real firings, across the
// houses.
type predictions struct{ compared, agreed atomic.Int32 }

// parityHouse is one real server: HTTP MCP, the demo house on the
// embedded broker, and a rule whose firings mark that every message sent
// before has been dispatched.
type parityHouse struct {
	s       *httpStack
	c       *client.Client
	pub     *mqtt.Client
	clock   *shiftedClock
	zone    *time.Location
	barrier int
	tally   *predictions
}

// shiftedClock runs at real speed from the time a behaviour sets, so
// timers armed from it (sun events) are due in real time.
type shiftedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *shiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *shiftedClock) set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = time.Until(at)
}

func newParityHouse(t *testing.T, sun bool) *parityHouse {
	h := &parityHouse{clock: &shiftedClock{}, zone: time.UTC}
	cfg := engine.Config{TimeZone: time.UTC, Approval: noApproval}
	if sun {
		zone, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Skip("no zone data:", err)
		}
		loc := engine.DemoLocation
		h.zone = zone
		cfg = engine.Config{TimeZone: zone, Location: &loc, LocationSource: engine.LocationDemo, Approval: noApproval, Now: h.clock.Now}
	}
	h.s = newHTTPStackCfg(t, cfg, storage.Options{})
	h.c = h.s.client("")
	var err error
	if h.pub, err = mqtt.Dial(context.Background(), mqtt.Options{Broker: h.s.mqtt, Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.pub.Close)
	deployed(t, h.c, `{"name": "barrier", "mode": "queued", "triggers": [{"id": "b", "state": "hall_light.brightness"}],
	  "steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]}`)
	return h
}

// check deploys the behaviour's program as rule name, drives the house,
// and compares the firings and the test run's prediction with the table.
func (h *parityHouse) check(t *testing.T, name string, b haBehaviour) {
	soon := time.Now().Add(5 * time.Second).In(h.zone).Truncate(time.Second)
	b.program = strings.ReplaceAll(b.program, "AT_SOON", soon.Format("15:04:05"))
	b.scenario = strings.ReplaceAll(b.scenario, "NOW_SOON", soon.Format(time.RFC3339))
	p := prog(t, b.program)
	p["name"] = name
	src := js(p)
	for _, a := range b.before {
		h.do(t, a, src)
	}
	deployed(t, h.c, src)
	for _, a := range b.drive {
		h.do(t, a, src)
	}
	runs := h.settle(t, name, b.want)
	for _, a := range b.after {
		h.do(t, a, src)
	}
	if _, err := h.s.eng.RemoveRule(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	got, ha := runStatuses(runs), b.ha
	switch ha {
	case "":
		ha = b.want
	case haNone:
		ha = ""
	}
	if got != b.want {
		t.Errorf("%s (%s): firings %q, want %q (Home Assistant: %q)", b.from, b.class, got, b.want, ha)
	}
	if (b.class == haSame) != (b.ha == "") {
		t.Errorf("%s: class %s, but Home Assistant's outcome is given as %q", b.from, b.class, b.ha)
	}
	if b.out != "" && len(runs) > 0 {
		tr := call(t, h.c, "pilotage_trace", map[string]any{"run_id": runs[len(runs)-1].ID})
		if j := js(tr); !strings.Contains(j, b.out) {
			t.Errorf("%s: the first firing's trace lacks %s: %s", b.from, b.out, j)
		}
	}
	if b.scenario != "" {
		h.predict(t, b, src, runs)
	}
}

// predict test-runs the program with the behaviour's scenario: the test
// run must end as the first real firing did (not_triggered when the rule
// did not fire).
func (h *parityHouse) predict(t *testing.T, b haBehaviour, src string, runs []storage.Run) {
	real := rules.StatusNotTriggered
	if len(runs) > 0 {
		real = runs[len(runs)-1].Status
	}
	out := call(t, h.c, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, src),
		"input": map[string]any{"scenario": prog(t, b.scenario)}, "store": false})
	h.tally.compared.Add(1)
	if got := status(out); got == real {
		h.tally.agreed.Add(1)
	} else {
		t.Errorf("%s: test run predicted %s, the real firing was %s: %v", b.from, got, real, out["outcome"])
	}
}

// do performs one act and waits until the house has it.
func (h *parityHouse) do(t *testing.T, a haAct, src string) {
	ctx := context.Background()
	switch {
	case a.dev != "":
		if err := h.s.sim.Trigger(ctx, a.dev, map[string]any{a.prop: a.val}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, a.dev+"."+a.prop, func() bool {
			l, ok := h.s.devs.Live(a.dev + "." + a.prop)
			return ok && rules.SameValue(l.Value, a.val)
		})
	case a.press != "":
		if err := h.s.sim.Press(ctx, a.press); err != nil {
			t.Fatal(err)
		}
	case a.avail != "":
		if err := h.pub.Publish(ctx, weatherAvail, []byte(a.avail), 1, true); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the weather station "+a.avail, func() bool {
			l, _ := h.s.devs.Live("outdoor_weather.temperature")
			return l.Available != nil && *l.Available == (a.avail == "online")
		})
	case a.redeploy == "same":
		deployed(t, h.c, src)
	case a.redeploy != "":
		p := prog(t, a.redeploy)
		p["name"] = prog(t, src)["name"]
		redeployed(t, h.c, js(p)) // a changed program replaces only when asked
	case a.clock != "":
		at, err := time.Parse(time.RFC3339, a.clock)
		if err != nil {
			t.Fatal(err)
		}
		h.clock.set(at)
	case a.started:
		rule := prog(t, src)["name"].(string)
		testutil.Eventually(t, 10*time.Second, rule+"'s first firing", func() bool { return len(ruleFirings(t, h.s, rule)) > 0 })
	case a.pass > 0:
		start := time.Now() // a deadline, not a synchronisation: a window must be due
		testutil.Eventually(t, a.pass+10*time.Second, a.pass.String()+" to pass", func() bool { return time.Since(start) >= a.pass })
	}
}

// settle waits for the rule's firings to end as want says, then for a
// barrier firing (every message sent before it has been dispatched), and
// returns the firings, newest first.
func (h *parityHouse) settle(t *testing.T, rule, want string) []storage.Run {
	n := 0
	if want != "" {
		n = strings.Count(want, ",") + 1
	}
	done := func() bool {
		runs := ruleFirings(t, h.s, rule)
		return len(runs) >= n && !slices.ContainsFunc(runs, func(r storage.Run) bool { return r.Status == storage.StatusRunning })
	}
	testutil.Eventually(t, 15*time.Second, rule+"'s firings to end as "+strconv.Quote(want), done)
	h.barrier++
	level := float64(1 + h.barrier%250)
	if l, _ := h.s.devs.Live("hall_light.brightness"); rules.SameValue(l.Value, level) {
		h.barrier++ // the same value would be no change
		level = float64(1 + h.barrier%250)
	}
	if err := h.s.sim.Trigger(context.Background(), "hall_light", map[string]any{"brightness": level}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "the barrier firing", func() bool {
		for _, r := range ruleFirings(t, h.s, "barrier") {
			if r.Status == rules.StatusSuccess && h.barrierSeen(r, level) {
				return true
			}
		}
		return false
	})
	testutil.Eventually(t, 15*time.Second, rule+"'s firings to end as "+strconv.Quote(want), done)
	return ruleFirings(t, h.s, rule)
}

// barrierSeen reports whether barrier run r fired for level (its vars
// are exactly {"v": level}).
func (h *parityHouse) barrierSeen(r storage.Run, level float64) bool {
	return strings.Contains(string(r.Envelope), fmt.Sprintf(`"vars":{"v":%g}`, level))
}

func ruleFirings(t *testing.T, s *httpStack, rule string) []storage.Run {
	t.Helper()
	s.eng.Flush()
	runs, err := s.store.ListRuns(context.Background(), storage.RunFilter{Rule: rule, Kind: "firing", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// runStatuses is the sorted statuses of runs, comma separated.
func runStatuses(runs []storage.Run) string {
	var out []string
	for _, r := range runs {
		out = append(out, r.Status)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// Programs of the table: a body that records the trigger's value, and
// bodies that run long enough for a second firing to meet the first. The
// presses of one behaviour go out on one connection and fire in order, so
// a second press always finds the first firing running; a redeploy goes
// through MCP once the first firing is recorded, hence the longer body.
const (
	haBody   = `"steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]`
	haLong   = `"steps": [{"id": "hold", "delay": "1s"}, {"id": "n", "set": {"v": "{{ trigger.value }}"}}]`
	haLonger = `"steps": [{"id": "hold", "delay": "3s"}, {"id": "n", "set": {"v": "{{ trigger.value }}"}}]`
	haOnPush = `"triggers": [{"id": "push", "event": "bedroom_remote.action", "value": "on"}]`
)

// haRule is a program of one trigger (JSON members) and body.
func haRule(trigger, rest string) string {
	return `{"name": "x", "triggers": [{"id": "t", ` + trigger + `}], ` + rest + `}`
}

// haScript is a program started by a press of "on".
func haScript(rest string) string { return `{"name": "x", ` + haOnPush + `, ` + rest + `}` }

const (
	stateTests   = "triggers/test_state.py "
	numericTests = "triggers/test_numeric_state.py "
	scriptTests  = "helpers/test_script.py "
	condTests    = "helpers/test_condition.py "
	sunCondTests = "sun/test_condition.py "
)

// haBehaviours is the table. Test names are Home Assistant's
// (tests/components/homeassistant/… and tests/helpers/…).
func haBehaviours(t *testing.T) []haBehaviour {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	monday := time.Date(2026, 1, 19, 12, 0, 0, 0, berlin)
	sunset := rules.NextSunEvent(monday, engine.DemoLocation, "sunset", 0)
	sunrise := rules.NextSunEvent(monday.Add(-12*time.Hour), engine.DemoLocation, "sunrise", 0)
	now := func(at time.Time) string { return `{"now": "` + at.Format(time.RFC3339) + `"}` }
	const motion, mode, plug = `"state": "hall_motion.occupancy"`, `"state": "living_thermostat.system_mode"`, `"state": "living_plug.power"`
	return []haBehaviour{
		// State triggers.
		{from: stateTests + "test_if_fires_on_entity_change", class: haSame, program: haRule(motion, haBody),
			before: []haAct{haMotion(false)}, drive: []haAct{haMotion(true)}, want: "success", scenario: `{"from": false, "value": true}`},
		{from: stateTests + "test_if_fires_on_entity_change_with_from_filter", class: haSame, program: haRule(motion+`, "from": false`, haBody),
			before: []haAct{haMotion(false)}, drive: []haAct{haMotion(true)}, want: "success", scenario: `{"from": false, "value": true}`},
		{from: stateTests + "test_if_fires_on_entity_change_with_to_filter", class: haSame, program: haRule(motion+`, "to": true`, haBody),
			before: []haAct{haMotion(false)}, drive: []haAct{haMotion(true)}, want: "success", scenario: `{"from": false, "value": true}`},
		{from: stateTests + "test_if_not_fires_if_to_filter_not_match", class: haSame, program: haRule(motion+`, "to": true`, haBody),
			before: []haAct{haMotion(true)}, drive: []haAct{haMotion(false)}, scenario: `{"from": true, "value": false}`},
		{from: stateTests + "test_if_not_fires_if_from_filter_not_match", class: haSame, program: haRule(mode+`, "from": "off", "to": "auto"`, haBody),
			before: []haAct{haMode("heat")}, drive: []haAct{haMode("auto")}, scenario: `{"from": "heat", "value": "auto"}`},
		{from: stateTests + "test_if_fires_on_entity_change_with_not_from_filter", class: haSame, program: haRule(mode+`, "not_from": "off"`, haBody),
			before: []haAct{haMode("heat")}, drive: []haAct{haMode("auto")}, want: "success", scenario: `{"from": "heat", "value": "auto"}`},
		{from: stateTests + "test_if_fires_on_entity_change_with_not_to_filter", class: haSame, program: haRule(mode+`, "not_to": "auto"`, haBody),
			before: []haAct{haMode("heat")}, drive: []haAct{haMode("auto"), haMode("off")}, want: "success", out: `"v":"off"`},
		{from: stateTests + "test_if_fires_on_entity_change_with_both_filters", class: haSame, program: haRule(mode+`, "from": "heat", "to": ["auto", "off"]`, haBody),
			before: []haAct{haMode("heat")}, drive: []haAct{haMode("off")}, want: "success", scenario: `{"from": "heat", "value": "off"}`},
		{from: stateTests + "test_if_not_fires_if_entity_not_match", class: haSame, program: haRule(motion, haBody),
			before: []haAct{haDoor(true)}, drive: []haAct{haDoor(false)}},
		{from: stateTests + "test_attribute_if_fires_on_entity_change_with_both_filters", class: haSame,
			note:    "an attribute is its own catalog entry",
			program: haRule(`"state": "living_thermostat.occupied_heating_setpoint", "from": 21, "to": 22`, haBody),
			before:  []haAct{haSet("living_thermostat", "occupied_heating_setpoint", 21.0)}, drive: []haAct{haSet("living_thermostat", "occupied_heating_setpoint", 22.0)},
			after: []haAct{haSet("living_thermostat", "occupied_heating_setpoint", 21.0)}, want: "success", scenario: `{"from": 21, "value": 22}`},
		{from: stateTests + "test_if_fires_on_entity_change_with_for", class: haSame, program: haRule(motion+`, "to": true, "for": "1s"`, haBody),
			before: []haAct{haMotion(false)}, drive: []haAct{haMotion(true)}, want: "success", scenario: `{"from": false, "value": true}`},
		{from: stateTests + "test_if_not_fires_on_entity_change_with_for", class: haSame, program: haRule(motion+`, "to": true, "for": "2s"`, haBody),
			before: []haAct{haMotion(false)}, drive: []haAct{haMotion(true), haMotion(false), haPass(2500 * time.Millisecond)},
			scenario: `{"from": false, "value": true, "timeline": [{"at": "500ms", "state": {"hall_motion.occupancy": false}}]}`},
		{from: stateTests + "test_if_fires_on_change_from_with_for", class: haSame, program: haRule(mode+`, "from": "heat", "for": "2s"`, haBody),
			before: []haAct{haMode("heat")}, drive: []haAct{haMode("auto"), haMode("off")}, want: "success", out: `"v":"auto"`,
			scenario: `{"from": "heat", "value": "auto", "timeline": [{"at": "300ms", "state": {"living_thermostat.system_mode": "off"}}]}`},
		{from: stateTests + "test_if_not_fires_on_change_from_with_for", class: haSame, program: haRule(mode+`, "from": "heat", "for": "2s"`, haBody),
			before: []haAct{haMode("heat")}, drive: []haAct{haMode("auto"), haMode("heat"), haPass(2500 * time.Millisecond)},
			scenario: `{"from": "heat", "value": "auto", "timeline": [{"at": "300ms", "state": {"living_thermostat.system_mode": "heat"}}]}`},
		{from: "triggers/state.py: a value already there at setup is not a change", class: haDifferent,
			note:    "a value that already matches when the rule is armed counts as held from then (\"no motion for 2h\" after a deploy); Home Assistant waits for a change",
			program: haRule(motion+`, "to": true, "for": "1s"`, haBody),
			before:  []haAct{haMotion(true)}, want: "success", ha: haNone, scenario: `{"value": true}`},
		// Numeric triggers.
		{from: numericTests + "test_if_fires_on_entity_change_below", class: haSame, program: haRule(plug+`, "below": 10`, haBody),
			before: []haAct{haPower(11)}, drive: []haAct{haPower(9)}, want: "success", scenario: `{"from": 11, "value": 9}`},
		{from: numericTests + "test_if_not_fires_on_entity_change_below_to_below", class: haSame, program: haRule(plug+`, "below": 10`, haBody),
			before: []haAct{haPower(11)}, drive: []haAct{haPower(9), haPower(5)}, want: "success", out: `"v":9`},
		{from: numericTests + "test_if_not_below_fires_on_entity_change_to_equal", class: haSame, program: haRule(plug+`, "below": 10`, haBody),
			before: []haAct{haPower(11)}, drive: []haAct{haPower(10)}, scenario: `{"from": 11, "value": 10}`},
		{from: numericTests + "test_if_fires_on_entity_change_above", class: haSame, program: haRule(plug+`, "above": 10`, haBody),
			before: []haAct{haPower(9)}, drive: []haAct{haPower(11)}, want: "success", scenario: `{"from": 9, "value": 11}`},
		{from: numericTests + "test_if_fires_on_entity_change_below_range", class: haSame, program: haRule(plug+`, "above": 5, "below": 10`, haBody),
			before: []haAct{haPower(11)}, drive: []haAct{haPower(9)}, want: "success", scenario: `{"from": 11, "value": 9}`},
		{from: numericTests + "test_if_fires_on_entity_change_with_for", class: haSame, program: haRule(plug+`, "above": 10, "for": "1s"`, haBody),
			before: []haAct{haPower(9)}, drive: []haAct{haPower(11), haPower(12)}, want: "success", scenario: `{"from": 9, "value": 11}`},
		{from: numericTests + "test_if_not_fires_on_entity_change_with_for", class: haSame, program: haRule(plug+`, "above": 10, "for": "2s"`, haBody),
			before: []haAct{haPower(9)}, drive: []haAct{haPower(11), haPower(9), haPass(2500 * time.Millisecond)},
			scenario: `{"from": 9, "value": 11, "timeline": [{"at": "300ms", "state": {"living_plug.power": 9}}]}`},
		// Time.
		{from: "triggers/test_time.py test_if_fires_using_at", class: haSame, program: haRule(`"at": "AT_SOON"`, haBody),
			want: "success", scenario: `{"now": "NOW_SOON"}`},
		// Conditions.
		{from: condTests + "a state condition", house: houseScripts, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "expr": "state('front_door.contact') == false"}], ` + haBody),
			before:  []haAct{haDoor(false)}, drive: []haAct{haPress("on")}, want: "success", scenario: `{"state": {"front_door.contact": false}}`},
		{from: condTests + "a numeric_state condition", house: houseScripts, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "expr": "state('living_plug.power') < 10"}], ` + haBody),
			before:  []haAct{haPower(20)}, drive: []haAct{haPress("on")}, want: "conditions_not_met", scenario: `{"state": {"living_plug.power": 20}}`},
		{from: condTests + "test_or_condition", house: houseScripts, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "expr": "state('living_plug.power') < 10 || state('front_door.contact') == false"}], ` + haBody),
			before:  []haAct{haPower(20), haDoor(false)}, drive: []haAct{haPress("on")}, want: "success",
			scenario: `{"state": {"living_plug.power": 20, "front_door.contact": false}}`},
		{from: condTests + "a condition on an unavailable entity is false", house: houseScripts, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "expr": "state('outdoor_weather.temperature') > -100"}], ` + haBody),
			before:  []haAct{haAvail("offline")}, drive: []haAct{haPress("on")}, after: []haAct{haAvail("online")}, want: "conditions_not_met"},
		{from: condTests + "a trigger condition", house: houseScripts, class: haSame,
			program: `{"name": "x", "triggers": [{"id": "a", "event": "bedroom_remote.action", "value": "on"}, {"id": "b", "event": "bedroom_remote.action", "value": "off"}],
			  "conditions": [{"id": "c", "expr": "trigger.id == 'b'"}], ` + haBody + `}`,
			drive: []haAct{haPress("on")}, want: "conditions_not_met", scenario: `{"trigger": "a", "value": "on"}`},
		// Script modes, waits, repeat, choose.
		{from: scriptTests + "test_script_mode_single", house: houseScripts, class: haSame, program: haScript(haLong),
			drive: []haAct{haPress("on"), haPress("on")}, want: "skipped,success"},
		{from: scriptTests + "test_script_mode_2 (restart)", house: houseScripts, class: haSame, program: haScript(`"mode": "restart", ` + haLong),
			drive: []haAct{haPress("on"), haPress("on")}, want: "cancelled,success"},
		{from: scriptTests + "test_script_mode_queued", house: houseScripts, class: haSame, program: haScript(`"mode": "queued", ` + haLong),
			drive: []haAct{haPress("on"), haPress("on")}, want: "success,success"},
		{from: scriptTests + "test_max_exceeded (queued, max 2)", house: houseScripts, class: haSame,
			note:    "max counts the running run with the waiting ones (it counted the waiting ones only)",
			program: haScript(`"mode": "queued", "max": 2, ` + haLong), drive: []haAct{haPress("on"), haPress("on"), haPress("on")}, want: "skipped,success,success"},
		{from: scriptTests + "test_max_exceeded (parallel, max 2)", house: houseScripts, class: haSame,
			program: haScript(`"mode": "parallel", "max": 2, ` + haLong), drive: []haAct{haPress("on"), haPress("on"), haPress("on")}, want: "skipped,success,success"},
		{from: scriptTests + "test_wait_template_basic", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "w", "wait": {"expr": "state('front_door.contact') == false"}, "timeout": "10s"}, {"id": "n", "set": {"v": 1}}]`),
			before:  []haAct{haDoor(true)}, drive: []haAct{haPress("on"), haDoor(false)}, want: "success", out: `"met":true`,
			scenario: `{"timeline": [{"at": "1s", "state": {"front_door.contact": false}}]}`},
		{from: scriptTests + "test_wait_timeout (continue_on_timeout defaults to true)", house: houseScripts, class: haDifferent,
			note:    "a timed-out wait fails the run unless continue_on_timeout is true; Home Assistant goes on by default",
			program: haScript(`"steps": [{"id": "w", "wait": {"expr": "state('front_door.contact') == false"}, "timeout": "300ms"}, {"id": "n", "set": {"v": 1}}]`),
			before:  []haAct{haDoor(true)}, drive: []haAct{haPress("on")}, want: "timeout", ha: "success", scenario: `{}`},
		{from: scriptTests + "test_wait_for_trigger_variables (a wait for a state already there)", house: houseScripts, class: haDifferent,
			note:    "a state wait is met at once when the state already has the value; wait_for_trigger waits for a change (and times out here)",
			program: haScript(`"steps": [{"id": "w", "wait": {"state": "hall_motion.occupancy", "to": true}, "timeout": "300ms", "continue_on_timeout": true}, {"id": "n", "set": {"v": 1}}]`),
			before:  []haAct{haMotion(true)}, drive: []haAct{haPress("on")}, want: "success", out: `"met":true`, ha: "success", scenario: `{"state": {"hall_motion.occupancy": true}}`},
		{from: scriptTests + "test_repeat_count", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "loop", "repeat": {"count": 3}, "do": [{"id": "n", "set": {"i": "{{ vars.index }}"}}]}]`),
			drive:   []haAct{haPress("on")}, want: "success", out: `"iterations":3`, scenario: `{}`},
		{from: scriptTests + "test_repeat_conditional (while)", house: houseScripts, class: haSame, note: "while and until need max",
			program: haScript(`"steps": [{"id": "loop", "repeat": {"while": "vars.index <= 2", "max": 10}, "do": [{"id": "n", "set": {"i": "{{ vars.index }}"}}]}]`),
			drive:   []haAct{haPress("on")}, want: "success", out: `"iterations":2`, scenario: `{}`},
		{from: scriptTests + "test_repeat_for_each", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "loop", "repeat": {"for_each": ["a", "b", "c"]}, "do": [{"id": "n", "set": {"i": "{{ vars.item }}"}}]}]`),
			drive:   []haAct{haPress("on")}, want: "success", out: `"iterations":3`, scenario: `{}`},
		{from: scriptTests + "test_choose", house: houseScripts, class: haSame,
			program: `{"name": "x", "triggers": [{"id": "p", "event": "bedroom_remote.action", "value": ["on", "off"]}], "steps": [{"id": "pick", "choose": [
			  {"label": "on", "when": "trigger.value == 'on'", "do": [{"id": "a", "set": {"v": 1}}]},
			  {"label": "off", "when": "trigger.value == 'off'", "do": [{"id": "b", "set": {"v": 2}}]}], "default": [{"id": "c", "set": {"v": 3}}]}]}`,
			drive: []haAct{haPress("off")}, want: "success", out: `"took":"off"`, scenario: `{"value": "off"}`},
		{from: scriptTests + "test_if", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "pick", "if": "trigger.value == 'on'", "then": [{"id": "a", "set": {"v": 1}}], "else": [{"id": "b", "set": {"v": 2}}]}]`),
			drive:   []haAct{haPress("on")}, want: "success", out: `"took":"then"`, scenario: `{}`},
		{from: scriptTests + "test_stop_action", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "done", "stop": "enough"}, {"id": "n", "set": {"v": 1}}]`),
			drive:   []haAct{haPress("on")}, want: "stopped", scenario: `{}`},
		{from: scriptTests + "test_stop_action (error: true)", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "done", "stop": "broken", "error": true}]`),
			drive:   []haAct{haPress("on")}, want: "failed", scenario: `{}`},
		{from: scriptTests + "test_continue_on_error", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "dim", "call": "hall_light.set", "args": {"brightness": "{{ trigger.value }}"}, "continue_on_error": true}, {"id": "n", "set": {"v": 1}}]`),
			drive:   []haAct{haPress("on")}, want: "success", out: `"v":1`, scenario: `{}`},
		{from: scriptTests + "test_set_variable", house: houseScripts, class: haSame,
			program: haScript(`"steps": [{"id": "a", "set": {"x": 1}}, {"id": "b", "set": {"y": "{{ vars.x + 1 }}"}}]`),
			drive:   []haAct{haPress("on")}, want: "success", out: `"y":2`, scenario: `{}`},
		// Automation lifecycle.
		{from: "automation/test_init.py test_reload_unchanged_does_not_stop", house: houseScripts, class: haSame, program: haScript(haLonger),
			drive: []haAct{haPress("on"), haStarted, haRedeploy("same")}, want: "success"},
		{from: "automation/test_init.py test_automation_stops (a changed reload stops the run)", house: houseScripts, class: haSame, program: haScript(haLonger),
			drive: []haAct{haPress("on"), haStarted, haRedeploy(haScript(`"steps": [{"id": "hold", "delay": "900ms"}]`))}, want: "cancelled"},
		// Sun and time, on the sun house's clock.
		{from: "sun/test_trigger.py test_sunset_trigger", house: houseSun, class: haSame, program: haRule(`"sun": "sunset"`, haBody),
			before: []haAct{haClock(sunset.Add(-4 * time.Second))}, want: "success", scenario: now(sunset)},
		{from: "sun/test_trigger.py test_sunset_trigger_with_offset", house: houseSun, class: haSame, program: haRule(`"sun": "sunset", "offset": "30m"`, haBody),
			before: []haAct{haClock(sunset.Add(30*time.Minute - 4*time.Second))}, want: "success", scenario: now(sunset.Add(30 * time.Minute))},
		{from: sunCondTests + "test_if_action_before_sunrise_no_offset (before)", house: houseSun, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "sun": {"before": "sunrise"}}], ` + haBody),
			before:  []haAct{haClock(sunrise.Add(-time.Minute))}, drive: []haAct{haPress("on")}, want: "success", scenario: now(sunrise.Add(-time.Minute))},
		{from: sunCondTests + "test_if_action_before_sunrise_no_offset (after)", house: houseSun, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "sun": {"before": "sunrise"}}], ` + haBody),
			before:  []haAct{haClock(sunrise.Add(time.Minute))}, drive: []haAct{haPress("on")}, want: "conditions_not_met", scenario: now(sunrise.Add(time.Minute))},
		{from: sunCondTests + "test_if_action_after_sunset_with_offset", house: houseSun, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "sun": {"after": "sunset", "after_offset": "1h"}}], ` + haBody),
			before:  []haAct{haClock(sunset.Add(59 * time.Minute))}, drive: []haAct{haPress("on")}, want: "conditions_not_met", scenario: now(sunset.Add(59 * time.Minute))},
		{from: "helpers/condition.py sun(): after sunset and before sunrise in one condition", house: houseSun, class: haDifferent,
			note:    "the pair is the night; Home Assistant checks both bounds against today's events, so it never holds (its users write an or of two conditions)",
			program: haScript(`"conditions": [{"id": "c", "sun": {"after": "sunset", "before": "sunrise"}}], ` + haBody),
			before:  []haAct{haClock(monday.Add(11 * time.Hour))}, drive: []haAct{haPress("on")}, want: "success", ha: "conditions_not_met", scenario: now(monday.Add(11 * time.Hour))},
		{from: condTests + "test_time_window", house: houseSun, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "time": {"after": "22:00", "before": "06:00"}}], ` + haBody),
			before:  []haAct{haClock(monday.Add(11 * time.Hour))}, drive: []haAct{haPress("on")}, want: "success", scenario: now(monday.Add(11 * time.Hour))},
		{from: "time condition test_if_action_one_weekday", house: houseSun, class: haSame,
			program: haScript(`"conditions": [{"id": "c", "time": {"weekday": "mon"}}], ` + haBody),
			before:  []haAct{haClock(monday.Add(24 * time.Hour))}, drive: []haAct{haPress("on")}, want: "conditions_not_met", scenario: now(monday.Add(24 * time.Hour))},
		// What automation/1 cannot write.
		{from: "template/test_trigger.py test_if_fires_on_change_bool", class: haCannot, note: "no template trigger: a rule names catalog entries (a numeric or state trigger, or an expr wait, covers most)"},
		{from: "homeassistant/triggers/test_homeassistant.py test_if_fires_on_hass_start", class: haCannot, note: "a restart is never a change: there is no start trigger"},
		{from: "triggers/test_time.py test_if_fires_using_at_input_datetime", class: haCannot, note: "at is a constant time of day"},
		{from: stateTests + "test_if_fires_on_entities_change_overlap_for_template", class: haCannot, note: "for is a constant duration, not a template"},
		{from: scriptTests + "test_parallel", class: haCannot, note: "steps run in order: no parallel block"},
		{from: scriptTests + "test_firing_event_basic", class: haCannot, note: "no action fires an event"},
	}
}
