package interp

import (
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"strconv"
)

// Availability: whether the device of a state or event entry is
// reachable (its availability topic says online). Rules see it through
// the `available` trigger and the available() function; the state of an
// entry whose device is offline reads null, and a condition that reads
// it is not met (Home Assistant: a condition on an unavailable entity is
// false), with the reason in its trace entry.

// branchCond evaluates an if or choose condition: false, saying why, when
// it reads the state of an entry whose device is offline (as a
// condition does).
func (r *interp) branchCond(f *frame, x *model.Expr) (bool, string, error) {
	if id := model.UnavailableRead(x, r.w); id != "" {
		return false, x.Src + " = false: " + id + " is unavailable (its device is offline)", nil
	}
	b, err := x.EvalBool(f.env)
	return b, x.Src + " = " + strconv.FormatBool(b), err
}
