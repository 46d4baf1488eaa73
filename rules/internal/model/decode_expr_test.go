package model

import (
	"fmt"
	"reflect"
	"testing"
)

func TestCompileExprPooledMatches(t *testing.T) {
	for _, src := range []string{
		"state('hall_motion.illuminance') < 30",
		"hour(now()) >= 23 && weekday(now()) != 0",
		"trigger.value in ['on', 'toggle'] ? 1 : 2",
		"min(254, (state('hall_light.brightness') ?? 0) + 50)",
		"vars.level / 10",
		"steps.x.output.met == false",
		"seconds('2m') > 60",
		"now()", "1 +", "foo.bar", "state(vars.x)", "upper('a') + lower('B')",
		"len([1,2,3]) + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10",
	} {
		t.Run(src, func(t *testing.T) {
			for _, nodes := range []uint{0, 5} {
				a, errA := CompileExpr(src, nodes)
				b, errB := NewCache().CompileExpr(src, nodes)
				if fmt.Sprint(errA) != fmt.Sprint(errB) {
					t.Fatalf("errors differ: %v vs %v", errA, errB)
				}
				if errA != nil {
					continue
				}
				if a.Node().String() != b.Node().String() || !reflect.DeepEqual(a.Refs, b.Refs) {
					t.Errorf("compiled differently: %s / %s", a.Node(), b.Node())
				}
				if fmt.Sprint(a.prog.Bytecode) != fmt.Sprint(b.prog.Bytecode) {
					t.Errorf("bytecode differs")
				}
			}
		})
	}
}
