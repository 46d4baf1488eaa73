package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/plan"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// checkPlan asserts the derivation rules of spec §5.6 on a plan.
func checkPlan(t *testing.T, p *model.Program, pl *pilotage.Plan) {
	t.Helper()
	if len(pl.Steps) == 0 || pl.Steps[0].ID != TriggersStepID || pl.Steps[0].Kind != plan.PlanKindTrigger {
		t.Fatalf("first plan step is not the triggers branch: %+v", pl.Steps)
	}
	kinds := map[string]string{}
	labels := map[string]map[string]bool{TriggersStepID: {}}
	for _, tr := range p.Triggers {
		labels[TriggersStepID][tr.ID] = true
	}
	var hints []pilotage.RiskHints
	for _, s := range pl.Steps {
		if _, dup := kinds[s.ID]; dup {
			t.Errorf("plan step %q twice", s.ID)
		}
		kinds[s.ID] = s.Kind
		hints = append(hints, s.RiskHints)
		if pilotage.RiskOf(s.RiskHints) != s.Risk && s.Kind != string(model.StepCall) {
			t.Errorf("%s: risk %s inconsistent with hints %+v", s.ID, s.Risk, s.RiskHints)
		}
		if len(s.Calls) > 0 && s.Kind != string(model.StepCall) {
			t.Errorf("%s: control-flow step %s carries calls", s.ID, s.Kind)
		}
		// A call through an unbound catalog param names no entry yet.
		if s.Kind == string(model.StepCall) && len(s.Calls) != 1 && !strings.Contains(s.Description, "(catalog param: ") {
			t.Errorf("%s: call step without calls", s.ID)
		}
		if s.Arm != nil && s.Loop != "" {
			t.Errorf("%s: both arm and loop", s.ID)
		}
		if s.Arm != nil {
			bk, ok := kinds[s.Arm.Branch]
			if !ok || (bk != string(model.StepIf) && bk != string(model.StepChoose) && bk != plan.PlanKindTrigger) {
				t.Errorf("%s: arm names %q (%s), not an earlier branch", s.ID, s.Arm.Branch, bk)
			}
			if s.Arm.Branch == TriggersStepID && !labels[TriggersStepID][s.Arm.Label] {
				t.Errorf("%s: unknown trigger label %q", s.ID, s.Arm.Label)
			}
		}
		if s.Loop != "" && kinds[s.Loop] != string(model.StepRepeat) {
			t.Errorf("%s: loop names %q, not an earlier repeat", s.ID, s.Loop)
		}
	}
	if agg := pilotage.Aggregate(hints...); agg != pl.MaxRiskHints || pilotage.RiskOf(agg) != pl.MaxRisk {
		t.Errorf("max risk %s %+v, aggregate %+v", pl.MaxRisk, pl.MaxRiskHints, agg)
	}
	if pl.Summary == "" {
		t.Error("no summary")
	}
}

func TestPlanInvariants(t *testing.T) {
	cat := demoCatalog()
	srcs := map[string]string{"fifty": string(fiftyStepProgram())}
	files, _ := filepath.Glob("testdata/validate/*.json")
	for _, f := range files {
		if !strings.HasSuffix(f, ".golden.json") {
			b, _ := os.ReadFile(f)
			srcs[f] = string(b)
		}
	}
	for _, g := range Guides() {
		for i, src := range guidePrograms(g.Body) {
			srcs[g.ID+"/"+string(rune('a'+i))] = src
		}
	}
	big := bigCatalog(5000)
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			c := Catalog(cat)
			if name == "fifty" {
				c = big
			}
			res, err := Validate([]byte(src), c, ValidateOptions{HasLocation: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Valid {
				// Golden cases whose plan golden is null are invalid on purpose.
				if plan, _ := os.ReadFile(strings.TrimSuffix(name, ".json") + ".plan.golden.json"); strings.TrimSpace(string(plan)) != "null" {
					t.Fatalf("invalid: %s", diagString(res.Diagnostics))
				}
				return
			}
			checkPlan(t, res.Program, res.Plan)
		})
	}
}

func TestPlanShape(t *testing.T) {
	src := prog(`[
	  {"id":"loop","repeat":{"count":2},"do":[
	    {"id":"br","if":"vars.index == 1","then":[{"id":"a","call":"front_lock.set","args":{"state":"LOCK"}}],
	     "else":[{"id":"inner","repeat":{"count":1},"do":[{"id":"b","call":"notify.phone","args":{"message":"x"}}]}]}]}]`)
	res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{})
	if err != nil || !res.Valid {
		t.Fatalf("%v %s", err, diagString(res.Diagnostics))
	}
	var got []string
	for _, s := range res.Plan.Steps {
		tag := s.ID + ":" + s.Kind
		if s.Arm != nil {
			tag += "@" + s.Arm.Branch + "." + s.Arm.Label
		}
		if s.Loop != "" {
			tag += "~" + s.Loop
		}
		got = append(got, tag)
	}
	want := "triggers:trigger go:trigger:state@triggers.go loop:repeat br:if~loop a:call@br.then inner:repeat@br.else b:call~inner"
	if strings.Join(got, " ") != want {
		t.Errorf("plan\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	h := res.Plan.MaxRiskHints
	if res.Plan.MaxRisk != pilotage.RiskSecurity || h.ReadOnly || !h.Destructive || !h.OpenWorld {
		t.Errorf("max risk %s %+v", res.Plan.MaxRisk, h)
	}
}
