package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/expr-lang/expr/vm"
)

// TestRunFormHoldsNoPointers: the run form of every cookbook program
// keeps none of the JSON Pointers and offsets diagnostics need, and runs
// exactly as the program does unshared.
func TestRunFormHoldsNoPointers(t *testing.T) {
	forCookbookTwins(t, func(name string, a, b *Compiled) {
		if p := findPtr(reflect.ValueOf(&b.Form), map[uintptr]bool{}); p != "" {
			t.Fatalf("%s: pointer %q left in the run form", name, p)
		}
	}, "without pointers")
}

// findPtr returns the first non-empty string field named Ptr, or the
// first non-zero Offset, reachable from v (expression programs aside).
func findPtr(v reflect.Value, seen map[uintptr]bool) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] || v.Type() == reflect.TypeOf((*vm.Program)(nil)) {
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
			switch {
			case f.Name == "Ptr" && f.Type.Kind() == reflect.String && v.Field(i).String() != "":
				return v.Field(i).String()
			case f.Name == "Offset" && f.Type.Kind() == reflect.Int && v.Field(i).Int() != 0:
				return "offset " + strconv.FormatInt(v.Field(i).Int(), 10)
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

// TestHeldRunsAsValidated: every cookbook program, lowered unshared and
// lowered through a Cache then held, plans and runs the same, and the
// held program's name is the copy inside its ref.
func TestHeldRunsAsValidated(t *testing.T) {
	forCookbookTwins(t, func(name string, a, b *Compiled) {
		ref := "automation." + b.Name() + "@0123456789ab"
		*b = *b.Hold(ref)
		if b.Name() != a.Name() || unsafe.StringData(b.Name()) != unsafe.StringData(ref[len("automation."):]) {
			t.Fatalf("%s: held name %q is not the copy inside its ref", name, b.Name())
		}
		pa, _ := json.Marshal(BuildPlan(a))
		pb, _ := json.Marshal(BuildPlan(b))
		pv, _ := json.Marshal(b.Plan) // as validated
		if string(pa) != string(pb) || string(pv) != string(pb) {
			t.Fatalf("%s: the held program plans differently:\n%s\n%s\n%s", name, pv, pa, pb)
		}
	}, "held")
}

// forCookbookTwins validates every cookbook program twice, a without a
// Cache and b through one, lets change alter the twins (a, b), then checks that they run the same from each
// trigger; at least 12 runs must have been compared.
func forCookbookTwins(t *testing.T, change func(name string, a, b *Compiled), how string) {
	t.Helper()
	cat := demoCatalog()
	now := time.Date(2026, 1, 15, 22, 0, 0, 0, time.UTC)
	n := 0
	for _, g := range Guides() {
		for i, src := range guidePrograms(g.Body) {
			name := fmt.Sprintf("%s/%d", g.ID, i+1)
			a, errA := Validate([]byte(src), cat, ValidateOptions{HasLocation: true})
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

// TestRunFormsShare: two programs lowered through one Cache share their
// equal parts, and keep apart constants that only look alike.
func TestRunFormsShare(t *testing.T) {
	cat := demoCatalog()
	prog := func(name, level string) *Compiled {
		src := `{"name":"` + name + `","triggers":[{"id":"t","state":"hall_motion.occupancy","to":true}],
"conditions":[{"id":"dark","expr":"state('hall_motion.illuminance') < 30"}],
"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON","brightness":"{{ trigger.value }}"}},
{"id":"lvl","set":{"level":` + level + `}},{"id":"pause","delay":"5m"}]}`
		res, err := Validate([]byte(src), cat, ValidateOptions{Cache: itCache})
		if err != nil || !res.Valid {
			t.Fatalf("%s: %v %v", name, err, res.Diagnostics)
		}
		return res.Compiled
	}
	a, b, c := prog("a", "0"), prog("b", "0"), prog("c", "-0")
	if &a.Steps[0].Vals[0] != &b.Steps[0].Vals[0] {
		t.Error("equal args are not shared")
	}
	if a.Conds[0].X != b.Conds[0].X {
		t.Error("equal conditions are not shared")
	}
	if a.Steps[0].ID != b.Steps[0].ID || unsafe.StringData(a.Steps[0].ID) != unsafe.StringData(b.Steps[0].ID) {
		t.Error("equal step ids are not shared")
	}
	if unsafe.StringData(a.Steps[0].Text) != unsafe.StringData(a.Entry("hall_light.set").ID) {
		t.Error("a call target is not the entry's id")
	}
	if &a.Steps[1].Vals[0] != &b.Steps[1].Vals[0] {
		t.Error("equal set steps are not shared")
	}
	if &a.Steps[1].Vals[0] == &c.Steps[1].Vals[0] {
		t.Error("0 and -0 are shared")
	}
	if x, _ := json.Marshal(c.Steps[1].Vals[0].T.Const); string(x) != "-0" {
		t.Errorf("-0 set to %s", x)
	}
	if d := a.Steps[2].More.(*model.DurSpec); d != b.Steps[2].More || !d.Constant || d.D != 5*time.Minute {
		t.Errorf("constant delays: %+v, %+v", d, b.Steps[2].More)
	}
}

// sameRuns runs a and b (the same program held two ways) from each of its
// triggers in a simulation and fails unless outcome, trace and calls are
// the same; it returns how many runs it compared.
func sameRuns(t *testing.T, what string, a, b *Compiled, now time.Time) int {
	t.Helper()
	n := 0
	for _, trig := range a.Triggers() {
		run := func(c *Compiled) string {
			sc := Scenario{Trigger: trig.ID(), Now: &now, Waits: map[string]string{}}
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
			t.Fatalf("%s: trigger %s runs differently:\n%s\n%s", what, trig.ID(), x, y)
		}
		n++
	}
	return n
}
