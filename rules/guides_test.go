package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/guides"
)

func TestGuidesIndex(t *testing.T) {
	gs := Guides()
	wantIDs := []string{"core", "closed-sets", "triggers", "steps", "expressions", "test-runs", "porting", "helpers", "cookbook"}
	if len(gs) != len(wantIDs) {
		t.Fatalf("%d guides, want %d", len(gs), len(wantIDs))
	}
	closed := 0
	for i, g := range gs {
		if g.ID != wantIDs[i] {
			t.Errorf("guide %d is %q, want %q", i, g.ID, wantIDs[i])
		}
		if g.Title == "" || g.Summary == "" || g.MediaType != "text/markdown" || !strings.HasPrefix(g.Version, "sha256:") {
			t.Errorf("%s: incomplete metadata %+v", g.ID, g)
		}
		if g.SizeBytes != len(g.Body) {
			t.Errorf("%s: size_bytes %d, body %d", g.ID, g.SizeBytes, len(g.Body))
		}
		seen := map[string]bool{}
		for _, tp := range g.Topics {
			if seen[tp] {
				t.Errorf("%s: topic %q twice", g.ID, tp)
			}
			seen[tp] = true
			body, ok := guides.GuideTopic(g.ID, tp)
			if !ok || body == "" {
				t.Errorf("%s: topic %q not fetchable", g.ID, tp)
			}
		}
		if seen[ClosedSetsTopic] {
			closed++
			if g.Level != guides.LevelReference {
				t.Errorf("closed-sets guide has level %q", g.Level)
			}
		}
		if g2, ok := GuideByID(g.ID); !ok || g2.Version != g.Version {
			t.Errorf("%s: GuideByID disagrees", g.ID)
		}
	}
	if closed != 1 {
		t.Errorf("%d guides carry the closed-sets topic, want exactly 1", closed)
	}
	if _, ok := GuideByID("nope"); ok {
		t.Error("unknown guide found")
	}
	if _, ok := guides.GuideTopic("core", "nope"); ok {
		t.Error("unknown topic found")
	}
}

func TestCoreGuide(t *testing.T) {
	g, _ := GuideByID("core")
	if g.Level != guides.LevelCore {
		t.Errorf("level %q", g.Level)
	}
	// The server appends its own section (zone, sun: about 550 bytes);
	// served, the guide must stay within 8 KiB.
	if g.SizeBytes > 8192-600 {
		t.Errorf("core guide is %d bytes, over 8 KiB less room for the server's section", g.SizeBytes)
	}
	for _, want := range []string{"discover", "learn", "lookup", "validate", "test_run", "deploy", "trace", "```json"} {
		if !strings.Contains(g.Body, want) {
			t.Errorf("core guide does not mention %q", want)
		}
	}
}

func TestClosedSetsGuide(t *testing.T) {
	g, _ := GuideByID(ClosedSetsTopic)
	var wants []string
	for _, c := range Codes {
		wants = append(wants, fmt.Sprintf("| `%s` | %s |", c.Code, c.Severity))
	}
	for _, k := range pilotage.Kinds {
		wants = append(wants, fmt.Sprintf("| `%s` | %s |", k.Kind, guides.YesNo(k.Callable)))
	}
	for _, r := range pilotage.RiskLevels {
		wants = append(wants, fmt.Sprintf("| `%s` | %t | %t | %t |", r.Risk, r.Hints.ReadOnly, r.Hints.Destructive, r.Hints.OpenWorld))
	}
	for _, d := range pilotage.DeviceTypes {
		wants = append(wants, fmt.Sprintf("| `%s` | `%s` | %s", d.Type, d.Risk, d.Means))
	}
	for _, s := range append(append([]StatusInfo{}, RunStatuses...), StepStatuses...) {
		wants = append(wants, fmt.Sprintf("| `%s` | %t | %s |", s.Status, s.OK, s.SideEffects))
	}
	for _, k := range model.StepKeys {
		wants = append(wants, "| `"+k+"` |")
	}
	for _, k := range model.ConditionKinds {
		wants = append(wants, "| `"+string(k.Kind)+"` | "+guides.CodeList(k.Members))
	}
	for _, k := range []string{"single", "restart", "queued", "parallel", "trigger:state", "trigger:numeric", "trigger:event", "trigger:cron", "trigger:time", "trigger:sun"} {
		wants = append(wants, "`"+k+"`")
	}
	for _, f := range model.EnvFunctions {
		wants = append(wants, f.Signature)
	}
	wants = append(wants,
		"## Scope rules", "## Input and params", "## Output of a run", "## Trace format",
		`{"<param>":…,"scenario":{"trigger":"<trigger id>","value":…,"from":…,"state":{"id":value},"now":"RFC3339","timeline":[{"at":"90s","state":{"id":value},"event":{"id":payload}}],"last_run":"-20m","waits":{"<wait step id>":"met"|"timeout"}}}`,
		"## Condition kinds", "`not_triggered`", "`assumed`", "`throttled`",
		`{"truncated": true, "bytes": N, "preview": "<first 200 chars of the JSON>"}`,
		"`{program_ref, rule, replaced, triggers, next_fire, time_zone}`", "`{calls: [...], vars}`",
		"`triggers`", "`continue`", "`exit`", "MaxIterations", "| 1000 |",
	)
	for _, w := range wants {
		if !strings.Contains(g.Body, w) {
			t.Errorf("closed-sets guide lacks %q", w)
		}
	}
}

// guidePrograms extracts the ```json blocks of a guide.
func guidePrograms(body string) []string {
	var out []string
	parts := strings.Split(body, "```json\n")
	for _, p := range parts[1:] {
		if i := strings.Index(p, "```"); i >= 0 {
			out = append(out, p[:i])
		}
	}
	return out
}

// TestGuideProgramsValidate validates every ```json block of every guide
// (the cookbook's rules and the core example) against the demo
// catalog: zero diagnostics.
func TestGuideProgramsValidate(t *testing.T) {
	cat := taggedCatalog() // with the devices' types and areas, as selectors need
	n := 0
	for _, g := range Guides() {
		progs := guidePrograms(g.Body)
		if g.ID == "cookbook" && len(progs) < 20 {
			t.Errorf("cookbook has %d programs, want ≥ 20", len(progs))
		}
		for i, src := range progs {
			n++
			t.Run(fmt.Sprintf("%s/%d", g.ID, i+1), func(t *testing.T) {
				res, err := Validate([]byte(src), cat, ValidateOptions{HasLocation: true})
				if err != nil {
					t.Fatal(err)
				}
				checkClosed(t, res.Diagnostics)
				if !res.Valid || len(res.Diagnostics) > 0 {
					t.Errorf("diagnostics: %s", diagString(res.Diagnostics))
				}
			})
		}
	}
	if n < 19 {
		t.Errorf("only %d guide programs", n)
	}
}

// TestCookbookCountIsCounted: the count of the cookbook's rules that the
// core guide, the cookbook and its summary state is the number of rules
// the cookbook holds (the core guide said 26 when it held 27).
func TestCookbookCountIsCounted(t *testing.T) {
	cook, _ := GuideByID("cookbook")
	core, _ := GuideByID("core")
	n := strconv.Itoa(len(guidePrograms(cook.Body)))
	for name, tc := range map[string]struct{ text, want string }{
		"core guide":       {core.Body, "`cookbook` (" + n + " rules)"},
		"cookbook":         {cook.Body, "\n" + n + " complete rules over the demo devices"},
		"cookbook summary": {cook.Summary, n + " complete rules by task"},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("%s does not say %q", name, tc.want)
		}
	}
	for _, g := range Guides() {
		if strings.Contains(g.Body+g.Summary, "@COOKBOOK_RULES@") {
			t.Errorf("guide %s keeps the placeholder", g.ID)
		}
	}
}
