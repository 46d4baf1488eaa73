package pilotage

import "testing"

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
