package promoted

import (
	"encoding/json"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// TestNoParamsSchemaIsCanonical: the shared schema of a program without
// params is what CanonicalJSON makes of it (entry revisions depend on it).
func TestNoParamsSchemaIsCanonical(t *testing.T) {
	if got := string(pilotage.CanonicalJSON(json.RawMessage(`{"type":"object","additionalProperties":false}`))); got != string(noParamsSchema) {
		t.Fatalf("canonical %s, shared %s", got, noParamsSchema)
	}
}

// program is a compiled program referencing a light's action and a
// motion sensor's state, as validation leaves it (Refs sorted, Entries
// beside them).
func program() *rules.Compiled {
	light := &pilotage.Entry{ID: "hall_light.set", Kind: pilotage.KindAction, Callable: true,
		InputSchema: json.RawMessage(`{"type":"object"}`), Risk: pilotage.RiskControl}
	motion := &pilotage.Entry{ID: "hall_motion.occupancy", Kind: pilotage.KindState, Risk: pilotage.RiskRead,
		RiskHints: pilotage.RiskHints{ReadOnly: true}}
	return &rules.Compiled{Raw: []byte(`{"name":"x"}`), Refs: []string{light.ID, motion.ID},
		Entries: []*pilotage.Entry{light, motion}}
}

// TestBodyBaseline: a held body's baseline is the one it was promoted
// with, its ids shared with the program's references when they are the
// same and its own when not.
func TestBodyBaseline(t *testing.T) {
	c := program()
	want := Sums(Baseline(c))
	b := NewBody(c, "automation.x@0", want)
	if len(want) != 2 || len(b.baseIDs) != len(want) || &b.baseIDs[0] != &b.compiled.Refs[0] {
		t.Fatalf("baseline ids %v, refs %v, want %d shared", b.baseIDs, b.compiled.Refs, len(want))
	}
	for i := range want {
		if got := b.baseline(i); got != want[i] {
			t.Errorf("baseline %d: %v, want %v", i, got, want[i])
		}
	}
	own := NewBody(&rules.Compiled{Raw: []byte(`{}`), Refs: []string{"a.set"}},
		"automation.x@0", []Sum{{id: "b.set", sum: [32]byte{1}}, {id: "c.set", sum: [32]byte{2}}})
	if len(own.baseIDs) != 2 || own.baseline(0) != (Sum{"b.set", [32]byte{1}}) || own.baseline(1) != (Sum{"c.set", [32]byte{2}}) ||
		string(own.compiled.Raw) != `{}` {
		t.Fatalf("a baseline of other ids: %v %x %s", own.baseIDs, own.baseSums, own.compiled.Raw)
	}
}

// TestDrift: the first referenced entry that is gone or whose
// load-bearing fields changed is named; a renamed entry is no drift.
func TestDrift(t *testing.T) {
	c := program()
	b := NewBody(c, "automation.x@0", Sums(Baseline(c)))
	for _, tc := range []struct {
		name   string
		change func(map[string]*pilotage.Entry)
		id     string
		gone   bool
	}{
		{"unchanged", func(map[string]*pilotage.Entry) {}, "", false},
		{"renamed", func(m map[string]*pilotage.Entry) { m["hall_light.set"].Name = "Hall" }, "", false},
		{"gone", func(m map[string]*pilotage.Entry) { delete(m, "hall_motion.occupancy") }, "hall_motion.occupancy", true},
		{"riskier", func(m map[string]*pilotage.Entry) { m["hall_light.set"].Risk = pilotage.RiskSecurity }, "hall_light.set", false},
		{"schema", func(m map[string]*pilotage.Entry) {
			m["hall_light.set"].InputSchema = json.RawMessage(`{"type":"object","minProperties":1}`)
		}, "hall_light.set", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := map[string]*pilotage.Entry{}
			for _, en := range program().Entries {
				now[en.ID] = en
			}
			tc.change(now)
			get := func(id string) (*pilotage.Entry, bool) { en, ok := now[id]; return en, ok }
			if id, gone := b.Drift(get); id != tc.id || gone != tc.gone {
				t.Fatalf("drift %q gone %v, want %q %v", id, gone, tc.id, tc.gone)
			}
		})
	}
}
