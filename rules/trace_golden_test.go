package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/validate"

	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// The -update flag may be declared by another golden test of this package;
// register it only if nobody has.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func traceUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// traceCatalog is a small map-based Catalog for the trace tests.
type traceCatalog map[string]*pilotage.Entry

func (c traceCatalog) Get(id string) (*pilotage.Entry, bool) { e, ok := c[id]; return e, ok }
func (c traceCatalog) IDs() []string                         { return core.SortedKeys(c) }
func (c traceCatalog) Version() string                       { return "trace-1" }

func newTraceCatalog() traceCatalog {
	c := traceCatalog{}
	add := func(id string, k pilotage.Kind, risk pilotage.Risk, in, out string) {
		e := &pilotage.Entry{ID: id, Kind: k, Callable: pilotage.KindCallable(k), Risk: risk, RiskHints: pilotage.HintsOf(risk)}
		if in != "" {
			e.InputSchema = json.RawMessage(in)
		}
		if out != "" {
			e.OutputSchema = json.RawMessage(out)
		}
		c[id] = e
	}
	light := `{"type":"object","additionalProperties":false,"properties":{"state":{"type":"string","enum":["ON","OFF","TOGGLE"]},"brightness":{"type":"integer","minimum":0,"maximum":254}}}`
	onOff := `{"type":"string","enum":["ON","OFF"]}`
	add("hall_light.set", pilotage.KindAction, pilotage.RiskControl, light, "")
	add("porch_light.set", pilotage.KindAction, pilotage.RiskControl, light, "")
	add("notify.phone", pilotage.KindAction, pilotage.RiskExternal, `{"type":"object","required":["message"],"properties":{"message":{"type":"string"}}}`, "")
	add("hall_light.state", pilotage.KindState, pilotage.RiskRead, "", onOff)
	add("hall_light.brightness", pilotage.KindState, pilotage.RiskRead, "", `{"type":"integer"}`)
	add("porch_light.state", pilotage.KindState, pilotage.RiskRead, "", onOff)
	add("hall_motion.occupancy", pilotage.KindState, pilotage.RiskRead, "", `{"type":"boolean"}`)
	add("hall_motion.illuminance", pilotage.KindState, pilotage.RiskRead, "", `{"type":"number"}`)
	add("bedroom_remote.action", pilotage.KindEvent, pilotage.RiskRead, "", `{"type":"string","enum":["on","off","toggle"]}`)
	add("script.flash", pilotage.KindAutomation, pilotage.RiskControl, `{"type":"object","properties":{"times":{"type":"integer","minimum":0,"maximum":10}}}`, "")
	return c
}

var traceBase = map[string]any{
	"hall_motion.occupancy": false, "hall_motion.illuminance": 12.0,
	"hall_light.state": "OFF", "hall_light.brightness": 0.0, "porch_light.state": "OFF",
}

var traceStart = time.Date(2026, 1, 15, 20, 0, 0, 0, time.UTC)

// traceAutomations validates the promoted bodies under testdata/traces/automations.
func traceAutomations(t testing.TB, cat Catalog) map[string]*Compiled {
	t.Helper()
	files, _ := filepath.Glob("testdata/traces/automations/*.json")
	out := map[string]*Compiled{}
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		out[id] = traceValidate(t, f, cat, nil).Compiled
	}
	return out
}

func traceValidate(t testing.TB, file string, cat Catalog, autos map[string]*Compiled) *validate.Result {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Validate(raw, cat, ValidateOptions{Cache: itCache, Automation: func(id string) (*Compiled, bool) { c, ok := autos[id]; return c, ok }})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if !res.Valid {
		t.Fatalf("%s is invalid: %+v", file, res.Diagnostics)
	}
	return res
}

type traceScenarioFile struct {
	Input  map[string]any `json:"input"`
	Limits struct {
		MaxSteps      int    `json:"max_steps"`
		MaxIterations int    `json:"max_iterations"`
		MaxWall       string `json:"max_wall"`
	} `json:"limits"`
}

// traceTestRun is the test-run path the engine takes: validate, bind the
// input, fire the scenario's trigger in a SimWorld, run.
func traceTestRun(t *testing.T, c *Compiled, autos map[string]*Compiled, sf traceScenarioFile) (*RunResult, *SimWorld) {
	t.Helper()
	params, sc, diags := ParseScenario(sf.Input)
	diags = append(diags, CheckScenario(c, sc)...)
	if len(diags) > 0 {
		t.Fatalf("scenario: %+v", diags)
	}
	w := NewSimWorld(func(id string) (any, bool) { v, ok := traceBase[id]; return v, ok }, traceStart, sc, nil)
	for id, a := range autos {
		w.SetAutomation(id, a)
	}
	fire, err := FireFor(c, sc, w)
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxSteps: sf.Limits.MaxSteps, MaxIterations: sf.Limits.MaxIterations}
	if sf.Limits.MaxWall != "" {
		lim.MaxWall, _ = ParseDuration(sf.Limits.MaxWall)
	}
	return Run(context.Background(), c, w, RunInput{Trigger: fire, Params: params, Limits: lim, Cache: itCache, Throttle: w.Throttle(c.Throttle())}), w
}

func TestTraceGolden(t *testing.T) {
	cat := newTraceCatalog()
	autos := traceAutomations(t, cat)
	files, _ := filepath.Glob("testdata/traces/*.program.json")
	sort.Strings(files)
	if len(files) < 8 {
		t.Fatalf("found %d golden cases, want at least 8", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".program.json")
		t.Run(name, func(t *testing.T) {
			vr := traceValidate(t, f, cat, autos)
			var sf traceScenarioFile
			raw, err := os.ReadFile(strings.TrimSuffix(f, ".program.json") + ".scenario.json")
			if err == nil {
				err = json.Unmarshal(raw, &sf)
			}
			if err != nil {
				t.Fatal(err)
			}
			res, w := traceTestRun(t, vr.Compiled, autos, sf)
			itCheckResult(t, vr.Plan, res)
			got := traceGoldenJSON(t, res, w)
			golden := strings.TrimSuffix(f, ".program.json") + ".trace.golden.json"
			if traceUpdate() {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("trace differs from %s (run with -update to accept):\n%s", golden, got)
			}
		})
	}
}

func traceGoldenJSON(t *testing.T, res *RunResult, w *SimWorld) []byte {
	t.Helper()
	calls := []string{}
	for _, c := range w.Calls() {
		a, _ := interp.MarshalCompact(c.Args)
		calls = append(calls, c.At.Format("15:04:05.000")+" "+c.ID+" "+string(a))
	}
	doc := map[string]any{
		"outcome": res.Outcome,
		"output":  res.Output,
		"trace":   TraceAt(res.Steps, pilotage.LevelFull),
		"calls":   calls,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
