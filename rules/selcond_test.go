package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// motionCatalog is taggedCatalog with two motion sensors in the hall
// (type motion, their occupancy tagged class:occupancy) and a barn of
// more window contacts than a selector may address.
func motionCatalog() *mapCatalog {
	c := taggedCatalog()
	add := func(e *pilotage.Entry) {
		c.m[e.ID] = e
		c.ids = append(c.ids, e.ID)
	}
	add(&pilotage.Entry{ID: "stairs_motion", Kind: pilotage.KindDevice, Risk: pilotage.RiskRead, RiskHints: pilotage.HintsOf(pilotage.RiskRead)})
	add(&pilotage.Entry{ID: "stairs_motion.occupancy", Kind: pilotage.KindState, Risk: pilotage.RiskRead, RiskHints: pilotage.HintsOf(pilotage.RiskRead),
		OutputSchema: []byte(`{"type":"boolean"}`)})
	c.m["hall_motion"].Tags = []string{"type:motion", "area:hall"}
	c.m["stairs_motion"].Tags = []string{"type:motion", "area:hall"}
	c.m["stairs_motion.occupancy"].Tags = []string{"class:occupancy"}
	for i := range MaxSelected + 1 {
		id := fmt.Sprintf("barn_window_%02d", i)
		add(&pilotage.Entry{ID: id, Kind: pilotage.KindDevice, Tags: []string{"type:window", "area:barn"}})
		add(&pilotage.Entry{ID: id + ".contact", Kind: pilotage.KindState, OutputSchema: []byte(`{"type":"boolean"}`)})
	}
	slices.Sort(c.ids)
	return c
}

// selCond is a program whose one condition is expr.
func selCond(expr string) string {
	return `{"name":"sc","triggers":[{"id":"door","state":"front_door.contact","to":true}],
	  "conditions":[{"id":"quiet","expr":` + fmt.Sprintf("%q", expr) + `}],
	  "steps":[{"id":"say","call":"notify.phone","args":{"message":"door"}}]}`
}

// TestSelectorReadsValidate checks states({…}) and since({…}) as an
// assistant writes them: a selector object of constants, resolved now
// (or a warning), each finding located inside the expression.
func TestSelectorReadsValidate(t *testing.T) {
	tooMany := `{"name":"sc","triggers":[{"id":"at","at":"07:00"}],"conditions":[`
	for i := range MaxSelectors + 1 {
		tooMany += fmt.Sprintf(`{"id":"c%d","expr":"since({area: 'hall', property: 'occupancy'}) != 1"},`, i)
	}
	tooMany = strings.TrimSuffix(tooMany, ",") + `],"steps":[{"id":"say","call":"notify.phone","args":{"message":"x"}}]}`
	tests := []struct {
		name, src    string
		code, path   string // "" code: valid with no finding
		msg, rangeOf string // rangeOf: the text the finding's range covers
	}{
		{name: "nobody seen", src: selCond("since({type: 'motion', property: 'occupancy'}) >= 1800")},
		{name: "any occupied", src: selCond("any(states({area: 'hall', property: 'occupancy'}), # == true)")},
		{name: "by tag", src: selCond(`count(states({tag: "class:occupancy", property: "occupancy"}), # == true) == 0`)},
		{name: "mixed with ids", src: selCond("state('front_door.contact') && (since({area: 'HALL', type: 'motion', property: 'occupancy'}) ?? 1e9) > 60")},
		{name: "nothing there", src: selCond("all(states({area: 'attic', property: 'occupancy'}), # == false)"),
			code: core.CodeNoMatch, path: "/conditions/0/expr", msg: `"occupancy" of every device in area "attic"`, rangeOf: "{area: 'attic', property: 'occupancy'}"},
		{name: "unknown member", src: selCond("all(states({room: 'hall', property: 'occupancy'}), # == false)"),
			code: core.CodeUnknownField, path: "/conditions/0/expr", msg: `no member "room"`, rangeOf: "room: 'hall'"},
		{name: "computed member", src: selCond("since({area: trigger.entity, property: 'occupancy'}) > 5"),
			code: core.CodeNonConstantRef, path: "/conditions/0/expr", msg: "area is a string constant", rangeOf: "area: trigger.entity"},
		{name: "empty member", src: selCond("since({area: '', property: 'occupancy'}) > 5"),
			code: core.CodeConstraint, path: "/conditions/0/expr", msg: "not empty", rangeOf: "area: ''"},
		{name: "no property", src: selCond("since({area: 'hall'}) > 5"),
			code: core.CodeMissingField, path: "/conditions/0/expr", msg: "needs a tag its states carry, or property", rangeOf: "{area: 'hall'}"},
		{name: "by the state's own tag", src: selCond("any(states({tag: 'class:occupancy'}), # == true)")},
		{name: "a device's tag without property", src: selCond("any(states({tag: 'type:motion'}), # == true)"),
			code: core.CodeNoMatch, path: "/conditions/0/expr", msg: `every state tagged "type:motion"`, rangeOf: "{tag: 'type:motion'}"},
		{name: "no filter", src: selCond("since({property: 'occupancy'}) > 5"),
			code: core.CodeMissingField, path: "/conditions/0/expr", msg: "at least one of area, type, tag", rangeOf: "{property: 'occupancy'}"},
		{name: "states of a variable", src: selCond("len(states(trigger.value)) > 0"),
			code: core.CodeNonConstantRef, path: "/conditions/0/expr", msg: "selector object literal", rangeOf: "trigger.value"},
		{name: "entities of a variable", src: selCond("len(entities(trigger.value)) > 0"),
			code: core.CodeNonConstantRef, path: "/conditions/0/expr", msg: "entities() needs a selector object literal", rangeOf: "trigger.value"},
		{name: "available of a variable", src: selCond("available(trigger.entity)"),
			code: core.CodeNonConstantRef, path: "/conditions/0/expr", msg: "available() needs a string constant", rangeOf: "trigger.entity"},
		{name: "available unknown member", src: selCond("available({area: 'hall', prop: 'occupancy'})"),
			code: core.CodeUnknownField, path: "/conditions/0/expr", msg: `no member "prop"`, rangeOf: "prop: 'occupancy'"},
		{name: "states of an id", src: selCond("len(states('hall_motion.occupancy')) > 0"),
			code: core.CodeBadExpression, path: "/conditions/0/expr"},
		{name: "too wide", src: selCond("any(states({type: 'window', property: 'contact'}), # == true)"),
			code: core.CodeConstraint, path: "/conditions/0/expr", msg: "addresses 65 state entries; at most 64", rangeOf: "{type: 'window', property: 'contact'}"},
		{name: "too many selectors", src: tooMany,
			code: core.CodeConstraint, path: "/conditions/32/expr", msg: "at most 32 selectors"},
	}
	cat := motionCatalog()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := validateFinds(t, tt.src, cat, tt.code, tt.path, tt.msg)
			if d != nil && tt.rangeOf != "" && (d.Range == nil || !rangeCovers(tt.src, *d, tt.rangeOf)) {
				t.Fatalf("finding %+v (range %+v) does not cover %q", d, d.Range, tt.rangeOf)
			}
		})
	}
}

// rangeCovers reports whether d's range inside the condition's
// expression (one line) is exactly want.
func rangeCovers(src string, d pilotage.Diagnostic, want string) bool {
	expr := src[strings.Index(src, `"expr":"`)+len(`"expr":"`):]
	expr = strings.ReplaceAll(expr[:strings.Index(expr, `"}`)], `\"`, `"`)
	r := []rune(expr)
	from, to := d.Range.Start.Column-1, d.Range.End.Column-1
	return from >= 0 && to <= len(r) && string(r[from:to]) == want
}

// TestSelectorReadsRun runs conditions over selector objects in test
// runs: scenario states of the selected ids read as state() reads them,
// since() is the most recent change among them, the set is resolved when
// the run reads it (a sensor that joined after validation counts), and
// the condition's trace entry names each id the selector read.
func TestSelectorReadsRun(t *testing.T) {
	const anyOccupied = "any(states({type: 'motion', property: 'occupancy'}), # == true)"
	const nobodyFor30m = "since({type: 'motion', property: 'occupancy'}) >= 1800"
	ago := func(m int) func(string) (time.Time, bool) {
		return func(string) (time.Time, bool) { return itStart.Add(-time.Duration(m) * time.Minute), true }
	}
	tests := []struct {
		name, expr string
		state      map[string]any // the scenario's
		changed    map[string]int // minutes since each changed
		joined     bool           // the live catalog has a third sensor
		offline    string         // this entry's device is offline
		met        bool
		reads      map[string]any // the trace's reads of the selector (nil: not checked)
		readAs     string         // the reads' key
	}{
		{name: "one occupied", expr: anyOccupied, state: map[string]any{"hall_motion.occupancy": false, "stairs_motion.occupancy": true}, met: true},
		{name: "which one", expr: "join(map(filter(entities({type: 'motion', property: 'occupancy'}), .value == true), .id), ', ') == 'stairs_motion.occupancy'",
			state: map[string]any{"hall_motion.occupancy": false, "stairs_motion.occupancy": true}, met: true,
			reads: map[string]any{"hall_motion.occupancy": false, "stairs_motion.occupancy": true}, readAs: `entities({type: "motion", property: "occupancy"})`},
		{name: "none occupied", expr: anyOccupied, state: map[string]any{"hall_motion.occupancy": false, "stairs_motion.occupancy": false}},
		{name: "joined later", expr: anyOccupied, state: map[string]any{"hall_motion.occupancy": false, "stairs_motion.occupancy": false, "attic_motion.occupancy": true}, joined: true, met: true},
		{name: "offline reads null", expr: "count(states({area: 'hall', property: 'occupancy'}), # == nil) == 1", offline: "stairs_motion.occupancy", met: true,
			reads: map[string]any{"hall_motion.occupancy": true, "stairs_motion.occupancy": nil}, readAs: `states({area: "hall", property: "occupancy"})`},
		{name: "one offline", expr: "!available({area: 'hall', property: 'occupancy'})", offline: "stairs_motion.occupancy", met: true,
			reads: map[string]any{"hall_motion.occupancy": true, "stairs_motion.occupancy": false}, readAs: `available({area: "hall", property: "occupancy"})`},
		{name: "all online", expr: "available({area: 'hall', property: 'occupancy'}) && available('front_door.contact')", met: true},
		{name: "quiet for 40 minutes", expr: nobodyFor30m, changed: map[string]int{"hall_motion.occupancy": 40, "stairs_motion.occupancy": 45}, met: true,
			reads: map[string]any{"hall_motion.occupancy": 2400.0, "stairs_motion.occupancy": 2700.0}, readAs: `since({type: "motion", property: "occupancy"})`},
		{name: "seen 10 minutes ago", expr: nobodyFor30m, changed: map[string]int{"hall_motion.occupancy": 40, "stairs_motion.occupancy": 10}},
		{name: "never changed", expr: "since({type: 'motion', property: 'occupancy'}) == nil", met: true,
			reads: map[string]any{"hall_motion.occupancy": nil, "stairs_motion.occupancy": nil}, readAs: `since({type: "motion", property: "occupancy"})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Validate([]byte(selCond(tt.expr)), motionCatalog(), ValidateOptions{Cache: itCache})
			if err != nil || !res.Valid {
				t.Fatalf("%v %+v", err, res.Diagnostics)
			}
			w := itSim(map[string]any{"hall_motion.occupancy": true, "stairs_motion.occupancy": true}, Scenario{State: tt.state})
			w.SetChangedBase(func(id string) (time.Time, bool) {
				if m, ok := tt.changed[id]; ok {
					return ago(m)(id)
				}
				return time.Time{}, false
			})
			if tt.joined {
				w.SetSelectBase(func(kind pilotage.Kind, s *Selector) []string {
					return append(slices.Clone(s.Resolved), "attic_motion.occupancy")
				})
			}
			if tt.offline != "" {
				w.SetAvailableBase(func(id string) bool { return id != tt.offline })
			}
			out := itRun(t, res.Compiled, w, itFire("door", true))
			if met := out.Outcome.Status != StatusConditionsNotMet; met != tt.met {
				t.Fatalf("met %v, want %v: %+v", met, tt.met, out.Outcome)
			}
			if tt.reads == nil {
				return
			}
			i := slices.IndexFunc(out.Steps, func(s pilotage.TraceStep) bool { return s.ID == "quiet" })
			in, _ := out.Steps[i].Input.(map[string]any)
			got, _ := in[tt.readAs].(map[string]any)
			if fmt.Sprint(got) != fmt.Sprint(tt.reads) {
				t.Fatalf("the condition's reads %v, want %v under %q", in, tt.reads, tt.readAs)
			}
		})
	}
}

// selectingWorld resolves selectors against its own catalog, as the
// engine's live World does (the set validation found plays no part),
// and keeps what each wait depends on.
type selectingWorld struct {
	*SimWorld
	cat      *mapCatalog
	extra    []string // ids it adds to every selection
	entities []string
}

func (w *selectingWorld) Select(kind pilotage.Kind, s *Selector) []string {
	return append(ScanSelect(w.cat.IDs(), w.cat.Get, kind, s), w.extra...)
}

func (w *selectingWorld) Wait(ctx context.Context, req *WaitRequest) (bool, error) {
	w.entities = append(w.entities, req.Entities...)
	return w.SimWorld.Wait(ctx, req)
}

// TestSelectorReadsLive: a World that resolves selectors itself decides
// what states({…}) reads when the run reads it; a wait on a selector
// depends on every state it addresses; more than MaxSelected at run time
// fails the run, saying so; the plan and Reads name what it read when
// validated.
func TestSelectorReadsLive(t *testing.T) {
	src := `{"name":"sc","triggers":[{"id":"door","state":"front_door.contact","to":true}],
	  "conditions":[{"id":"seen","expr":"any(states({type: 'motion', property: 'occupancy'}), # == true)"}],
	  "steps":[{"id":"quiet","wait":{"expr":"(since({area: 'hall', property: 'occupancy'}) ?? 1e9) >= 60"},"timeout":"5m"},
	           {"id":"say","call":"notify.phone","args":{"message":"quiet"}}]}`
	res, err := Validate([]byte(src), motionCatalog(), ValidateOptions{Cache: itCache})
	if err != nil || !res.Valid {
		t.Fatalf("%v %+v", err, res.Diagnostics)
	}
	cond := planStep(res.Plan, "seen")
	if want := `states() reads "occupancy" of any device of type "motion", now: hall_motion.occupancy, stairs_motion.occupancy`; !strings.Contains(cond.Description, want) {
		t.Errorf("condition's plan %q lacks %q", cond.Description, want)
	}
	if wait, want := planStep(res.Plan, "quiet"), `since() reads "occupancy" of any device in area "hall", now: hall_motion.occupancy, stairs_motion.occupancy`; !strings.Contains(wait.Description, want) {
		t.Errorf("wait's plan %q lacks %q", wait.Description, want)
	}
	if got := res.Compiled.Reads(); !slices.Equal(got, []string{"front_door.contact", "hall_motion.occupancy", "stairs_motion.occupancy"}) {
		t.Errorf("Reads %v", got)
	}
	live := motionCatalog()
	delete(live.m, "stairs_motion.occupancy") // gone since validation
	base := map[string]any{"hall_motion.occupancy": false, "stairs_motion.occupancy": true}
	tests := []struct {
		name   string
		extra  []string
		status string
		says   string
	}{
		{name: "the live set", status: StatusConditionsNotMet},
		{name: "one joined", extra: []string{"stairs_motion.occupancy"}, status: StatusSuccess},
		{name: "too many now", extra: slices.Repeat([]string{"stairs_motion.occupancy"}, MaxSelected), status: StatusFailed, says: "at most 64 are read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &selectingWorld{SimWorld: itSim(base, Scenario{}), cat: live, extra: tt.extra}
			out := itRun(t, res.Compiled, w, itFire("door", true))
			if out.Outcome.Status != tt.status || !strings.Contains(out.Outcome.Error, tt.says) {
				t.Fatalf("outcome %+v, want %s saying %q", out.Outcome, tt.status, tt.says)
			}
			if tt.status == StatusSuccess && !slices.Contains(w.entities, "hall_motion.occupancy") {
				t.Errorf("the wait depends on %v, want the hall's sensors", w.entities)
			}
		})
	}
}

// TestSelectorReadsTestRun is the assistant's test run of "the front door
// opens and nobody has been seen by any motion sensor for 30 minutes":
// the scenario's timeline moves the sensors, and the condition's trace
// entry says which ids the selector read and what each read.
func TestSelectorReadsTestRun(t *testing.T) {
	res, err := Validate([]byte(selCond("since({type: 'motion', property: 'occupancy'}) >= 1800")), motionCatalog(), ValidateOptions{Cache: itCache})
	if err != nil || !res.Valid {
		t.Fatalf("%v %+v", err, res.Diagnostics)
	}
	for _, c := range []struct {
		name, scenario, status string
		reads                  map[string]any
	}{
		{"quiet", `{"timeline": [{"at": "-40m", "state": {"hall_motion.occupancy": false}}, {"at": "-45m", "state": {"stairs_motion.occupancy": false}}]}`,
			StatusSuccess, map[string]any{"hall_motion.occupancy": 2400.0, "stairs_motion.occupancy": 2700.0}},
		{"stairs just now", `{"timeline": [{"at": "-40m", "state": {"hall_motion.occupancy": false}}, {"at": "-10m", "state": {"stairs_motion.occupancy": true}}]}`,
			StatusConditionsNotMet, map[string]any{"hall_motion.occupancy": 2400.0, "stairs_motion.occupancy": 600.0}},
		{"hall in the scenario's state", `{"state": {"hall_motion.occupancy": true}, "timeline": [{"at": "-45m", "state": {"stairs_motion.occupancy": false}}]}`,
			StatusConditionsNotMet, map[string]any{"hall_motion.occupancy": 0.0, "stairs_motion.occupancy": 2700.0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := honestRun(t, res.Compiled, c.scenario)
			if out.Outcome.Status != c.status {
				t.Fatalf("%+v", out.Outcome)
			}
			in, _ := itStep(t, out, "quiet").Input.(map[string]any)
			got := in[`since({type: "motion", property: "occupancy"})`]
			if fmt.Sprint(got) != fmt.Sprint(c.reads) {
				t.Fatalf("the condition read %v, want %v", in, c.reads)
			}
		})
	}
}
