package pilotage

import (
	"strings"
	"testing"
)

func TestContentHashIgnoresOnlyRevision(t *testing.T) {
	base := Entry{ID: "hall_light.set", Kind: KindAction, Callable: true, InputSchema: []byte(`{"type":"object"}`), Risk: RiskControl}
	h := base.ContentHash()
	rev := base
	rev.Revision = "r2"
	if rev.ContentHash() != h {
		t.Fatal("revision changed the content hash")
	}
	for name, mutate := range map[string]func(*Entry){
		"name":         func(e *Entry) { e.Name = "Hall" },
		"description":  func(e *Entry) { e.Description = "x" },
		"tags":         func(e *Entry) { e.Tags = []string{"area:hall"} },
		"input_schema": func(e *Entry) { e.InputSchema = []byte(`{"type":"object","minProperties":1}`) },
		"risk":         func(e *Entry) { e.Risk, e.RiskHints = RiskSecurity, RiskHints{Destructive: true} },
	} {
		e := base
		mutate(&e)
		if e.ContentHash() == h {
			t.Errorf("changing %s did not change the content hash", name)
		}
	}
}

func TestRiskOfAndAggregate(t *testing.T) {
	for _, l := range RiskLevels {
		if RiskOf(l.Hints) != l.Risk || HintsOf(l.Risk) != l.Hints {
			t.Errorf("%s: table and functions disagree", l.Risk)
		}
	}
	got := Aggregate(HintsOf(RiskRead), HintsOf(RiskControl), HintsOf(RiskExternal))
	if got != (RiskHints{OpenWorld: true}) || RiskOf(got) != RiskExternal {
		t.Errorf("aggregate = %+v", got)
	}
	if Aggregate() != (RiskHints{ReadOnly: true}) {
		t.Error("the aggregate of nothing is read-only")
	}
	if h := HintsOf("unknown"); !h.Destructive || !h.OpenWorld {
		t.Error("an unknown risk must fail closed")
	}
}

func TestDeviceTypes(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range DeviceTypes {
		if seen[d.Type] || d.Type == "" || d.Means == "" {
			t.Errorf("row %+v: duplicate or empty", d)
		}
		seen[d.Type] = true
		if HintsOf(d.Risk) == (RiskHints{Destructive: true, OpenWorld: true}) {
			t.Errorf("%s: unknown risk %q", d.Type, d.Risk)
		}
		for _, w := range d.Words {
			if w != strings.ToLower(w) {
				t.Errorf("%s: word %q must be lower case (descriptions are compared lower-cased)", d.Type, w)
			}
		}
		if DeviceTypeRisk(d.Type) != d.Risk {
			t.Errorf("DeviceTypeRisk(%s) = %s", d.Type, DeviceTypeRisk(d.Type))
		}
	}
	if DeviceTypes[len(DeviceTypes)-1].Type != "sensor" || DeviceTypeRisk("no such type") != RiskControl {
		t.Error("the last row must match anything; an unknown type is control")
	}
}
