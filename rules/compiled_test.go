package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// TestDropPointersKeepsBehaviour: every cookbook program, its pointers
// dropped, leaves no JSON Pointer behind and runs exactly as before.
func TestDropPointersKeepsBehaviour(t *testing.T) {
	forCookbookTwins(t, func(name string, a, b *Compiled) {
		b.DropPointers()
		if p := findPtr(reflect.ValueOf(b.Program), map[uintptr]bool{}); p != "" {
			t.Fatalf("%s: pointer %q left after DropPointers", name, p)
		}
	}, "without pointers")
}

// findPtr returns the first non-empty string field named Ptr reachable
// from v.
func findPtr(v reflect.Value, seen map[uintptr]bool) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return ""
		}
		seen[v.Pointer()] = true
		return findPtr(v.Elem(), seen)
	case reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return findPtr(v.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == "Ptr" && f.Type.Kind() == reflect.String && v.Field(i).String() != "" {
				return v.Field(i).String()
			}
			if p := findPtr(v.Field(i), seen); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if p := findPtr(v.Index(i), seen); p != "" {
				return p
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p := findPtr(it.Value(), seen); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestCompactKeepsProgram: every cookbook program, compacted, is equal to
// itself with only its pointers dropped (Compact changes where the parts
// are held, not what they are), plans the same and runs the same.
func TestCompactKeepsProgram(t *testing.T) {
	forCookbookTwins(t, func(name string, a, b *Compiled) {
		a.DropPointers()
		b.Compact()
		b.Compact() // a second call changes nothing
		if !reflect.DeepEqual(a.Program, b.Program) {
			t.Fatalf("%s: the compacted program differs", name)
		}
		pa, _ := json.Marshal(BuildPlan(a.Program, a.Entry))
		pb, _ := json.Marshal(BuildPlan(b.Program, b.Entry))
		pv, _ := json.Marshal(b.Plan) // as validated
		if string(pa) != string(pb) || string(pv) != string(pb) {
			t.Fatalf("%s: the compacted program plans differently:\n%s\n%s\n%s", name, pv, pa, pb)
		}
	}, "compacted")
}

// forCookbookTwins validates every cookbook program twice, lets change
// alter the twins (a, b), then checks that they run the same from each
// trigger; at least 12 runs must have been compared.
func forCookbookTwins(t *testing.T, change func(name string, a, b *Compiled), how string) {
	t.Helper()
	cat := demoCatalog()
	now := time.Date(2026, 1, 15, 22, 0, 0, 0, time.UTC)
	n := 0
	for _, g := range Guides() {
		for i, src := range guidePrograms(g.Body) {
			name := fmt.Sprintf("%s/%d", g.ID, i+1)
			a, errA := Validate([]byte(src), cat, ValidateOptions{HasLocation: true, Cache: itCache})
			b, errB := Validate([]byte(src), cat, ValidateOptions{HasLocation: true, Cache: itCache})
			if errA != nil || errB != nil || !a.Valid || !b.Valid {
				t.Fatalf("%s does not validate", name)
			}
			change(name, a.Compiled, b.Compiled)
			n += sameRuns(t, name+" "+how, a.Compiled, b.Compiled, now)
		}
	}
	if n < 12 {
		t.Fatalf("only %d runs compared", n)
	}
}

// TestCompactShares: two compacted programs share their equal parts, and
// keep apart constants that only look alike.
func TestCompactShares(t *testing.T) {
	cat := demoCatalog()
	prog := func(name, level string) *Program {
		src := `{"name":"` + name + `","triggers":[{"id":"t","state":"hall_motion.occupancy","to":true}],
"conditions":[{"id":"dark","expr":"state('hall_motion.illuminance') < 30"}],
"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON","brightness":"{{ trigger.value }}"}},
{"id":"lvl","set":{"level":` + level + `}}]}`
		res, err := Validate([]byte(src), cat, ValidateOptions{Cache: itCache})
		if err != nil || !res.Valid {
			t.Fatalf("%s: %v %v", name, err, res.Diagnostics)
		}
		res.Compiled.Compact()
		return res.Compiled.Program
	}
	a, b, c := prog("a", "0"), prog("b", "0"), prog("c", "-0")
	if reflect.ValueOf(a.Steps[0].Args).Pointer() != reflect.ValueOf(b.Steps[0].Args).Pointer() {
		t.Error("equal args are not shared")
	}
	if a.Conditions[0].Expr != b.Conditions[0].Expr {
		t.Error("equal conditions are not shared")
	}
	if a.Steps[0].ID != b.Steps[0].ID || unsafe.StringData(a.Steps[0].ID) != unsafe.StringData(b.Steps[0].ID) {
		t.Error("equal step ids are not shared")
	}
	if reflect.ValueOf(a.Steps[1].Set).Pointer() != reflect.ValueOf(b.Steps[1].Set).Pointer() {
		t.Error("equal set steps are not shared")
	}
	if reflect.ValueOf(a.Steps[1].Set).Pointer() == reflect.ValueOf(c.Steps[1].Set).Pointer() {
		t.Error("0 and -0 are shared")
	}
	if x, _ := json.Marshal(c.Steps[1].Set["level"].Const); string(x) != "-0" {
		t.Errorf("-0 set to %s", x)
	}
}

// sameRuns runs a and b (the same program held two ways) from each of its
// triggers in a simulation and fails unless outcome, trace and calls are
// the same; it returns how many runs it compared.
func sameRuns(t *testing.T, what string, a, b *Compiled, now time.Time) int {
	t.Helper()
	n := 0
	for _, trig := range a.Program.Triggers {
		run := func(c *Compiled) string {
			sc := Scenario{Trigger: trig.ID, Now: &now, Waits: map[string]string{}}
			w := NewSimWorld(func(string) (any, bool) { return nil, false }, now, sc, nil)
			fire, err := FireFor(c, sc, w)
			if err != nil {
				t.Fatal(err)
			}
			out := Run(context.Background(), c, w, RunInput{Trigger: fire, Limits: DefaultLimits})
			j, _ := json.Marshal(struct{ O, S, C any }{out.Outcome, out.Steps, out.Calls})
			return string(j)
		}
		if x, y := run(a), run(b); x != y {
			t.Fatalf("%s: trigger %s runs differently:\n%s\n%s", what, trig.ID, x, y)
		}
		n++
	}
	return n
}
