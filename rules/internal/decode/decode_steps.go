package decode

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

func (dc *decoder) stepList(n *core.JNode, depth int) []*model.Step {
	if !dc.array(n, "a step list") {
		return nil
	}
	if depth > dc.lim.MaxDepth {
		dc.fatal = Exhausted(fmt.Sprintf("steps nest deeper than %d levels (at %s)", dc.lim.MaxDepth, n.Ptr))
		return nil
	}
	out := make([]*model.Step, 0, len(n.Vals))
	for _, v := range n.Vals {
		if s := dc.step(v, depth); s != nil {
			out = append(out, s)
		}
		if dc.fatal != nil {
			return out
		}
	}
	return out
}

func (dc *decoder) step(n *core.JNode, depth int) *model.Step {
	if !dc.checkTime() || !dc.object(n, "step") {
		return nil
	}
	s := &model.Step{Ptr: n.Ptr, ID: dc.id(n)}
	key, ok := dc.kindKey(n, "a step", model.StepKeys)
	if !ok {
		dc.fields(n, "a step", model.AllStepFields)
		return s
	}
	s.Kind = model.StepKind(key)
	row, _ := model.StepKindOf(s.Kind)
	dc.fields(n, "a "+key+" step", row.Members)
	v := n.Get(key)
	switch s.Kind {
	case model.StepCall:
		if v != nil && v.Kind == core.JObj {
			s.Target = dc.selector(v, "call", model.SelectorMembers.Call)
		} else {
			s.Call, _ = dc.str(v, "call")
		}
		s.Args = map[string]*model.Template{}
		if a := n.Get("args"); a != nil && dc.object(a, "args") {
			for i, k := range a.Keys {
				s.Args[k] = dc.template(a.Vals[i])
			}
		}
		if c := n.Get("continue_on_error"); c != nil {
			s.ContinueOnError, _ = dc.boolean(c, "continue_on_error")
		}
	case model.StepDelay:
		s.Delay = dc.durTemplate(v, "delay")
	case model.StepWait:
		dc.waitStep(n, s)
	case model.StepIf:
		s.If = dc.exprField(v, "if")
		if t := dc.required(n, "then", "an if step"); t != nil {
			s.Then = dc.stepList(t, depth+1)
		}
		if e := n.Get("else"); e != nil {
			s.Else = dc.stepList(e, depth+1)
		}
	case model.StepChoose:
		dc.chooseStep(n, s, depth)
	case model.StepRepeat:
		s.Repeat = dc.repeatSpec(v)
		if d := dc.required(n, "do", "a repeat step"); d != nil {
			s.Do = dc.stepList(d, depth+1)
		}
	case model.StepSet:
		dc.setStep(v, s)
	case model.StepStop:
		s.Stop, _ = dc.str(v, "stop")
		if e := n.Get("error"); e != nil {
			s.Error, _ = dc.boolean(e, "error")
		}
	}
	return s
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

func (dc *decoder) setStep(v *core.JNode, s *model.Step) {
	s.Set = map[string]*model.Template{}
	if !dc.object(v, "set") {
		return
	}
	if len(v.Keys) == 0 {
		dc.Diags.Add(core.CodeMissingField, v.Ptr, "e.g. {\"set\": {\"count\": 0}}", "set needs at least one variable")
	}
	for i, k := range v.Keys {
		if !varNameRE.MatchString(k) {
			dc.Diags.Add(core.CodeInvalidID, v.Vals[i].Ptr, "variable names are identifiers, e.g. \"level\" or \"last_seen\"", "variable name %q is not an identifier", k)
			continue
		}
		s.Set[k] = dc.template(v.Vals[i])
	}
}

func (dc *decoder) waitStep(n *core.JNode, s *model.Step) {
	v := n.Get("wait")
	timeout := n.Get("timeout")
	var byParam []model.ParamField // a timeout written "{{ params.<name> }}"
	if timeout != nil && !dc.paramField(timeout, "timeout", &byParam) {
		s.Timeout = dc.constDuration(timeout, "timeout", false)
	}
	if c := n.Get("continue_on_timeout"); c != nil {
		s.ContinueOnTimeout, _ = dc.boolean(c, "continue_on_timeout")
		if n.Get("timeout") == nil {
			dc.Diags.Add(core.CodeConstraint, c.Ptr, "add \"timeout\": \"30m\" or drop continue_on_timeout", "continue_on_timeout needs a timeout")
		}
	}
	if !dc.object(v, "wait") {
		return
	}
	w := &model.WaitSpec{Ptr: v.Ptr, Inputs: byParam}
	s.Wait = w
	key, ok := dc.kindKey(v, "a wait", []string{"state", "event", "expr"})
	if !ok {
		return
	}
	switch key {
	case "state":
		w.State, _ = dc.str(v.Get("state"), "state")
		if v.Get("above") != nil || v.Get("below") != nil {
			dc.fields(v, "a numeric wait", []string{"state", "above", "below", "for"})
			w.Above, w.Below = dc.bounds(v, &w.Inputs)
		} else {
			dc.fields(v, "a state wait", []string{"state", "to", "from", "for"})
			w.To, w.From = jvalue(v.Get("to")), jvalue(v.Get("from"))
		}
	case "event":
		dc.fields(v, "an event wait", []string{"event", "value"})
		w.Event, _ = dc.str(v.Get("event"), "event")
		w.To = jvalue(v.Get("value"))
	case "expr":
		dc.fields(v, "an expression wait", []string{"expr", "for"})
		w.Expr = dc.exprField(v.Get("expr"), "expr")
	}
	if f := v.Get("for"); f != nil && key != "event" {
		w.For = dc.durTemplate(f, "for")
	}
}

func (dc *decoder) chooseStep(n *core.JNode, s *model.Step, depth int) {
	v := n.Get("choose")
	if d := n.Get("default"); d != nil {
		s.Default = dc.stepList(d, depth+1)
	}
	if !dc.array(v, "choose") {
		return
	}
	if len(v.Vals) == 0 {
		dc.Diags.Add(core.CodeMissingField, v.Ptr, "", "choose needs at least one arm {\"when\": ..., \"do\": [...]}")
	}
	labels := map[string]bool{}
	for i, a := range v.Vals {
		if !dc.object(a, "a choose arm") {
			continue
		}
		dc.fields(a, "a choose arm", []string{"label", "when", "do"})
		arm := &model.Arm{Ptr: a.Ptr, Label: fmt.Sprintf("arm%d", i+1)}
		if l := a.Get("label"); l != nil {
			if lbl, ok := dc.str(l, "label"); ok {
				switch {
				case lbl == "" || strings.ContainsAny(lbl, "#/") || utf8.RuneCountInString(lbl) > 64:
					dc.Diags.Add(core.CodeInvalidID, l.Ptr, "", "arm label %q must be 1-64 characters without '#' or '/'", lbl)
				case lbl == model.LabelDefault:
					dc.Diags.Add(core.CodeDuplicateLabel, l.Ptr, "", "label %q is reserved for the choose step's default arm", lbl)
				default:
					arm.Label = lbl
				}
			}
		}
		if labels[arm.Label] {
			dc.Diags.Add(core.CodeDuplicateLabel, a.Ptr, "", "two arms of this choose step are labelled %q", arm.Label)
		}
		labels[arm.Label] = true
		if w := dc.required(a, "when", "a choose arm"); w != nil {
			arm.When = dc.exprField(w, "when")
		}
		if d := dc.required(a, "do", "a choose arm"); d != nil {
			arm.Do = dc.stepList(d, depth+1)
		}
		s.Choose = append(s.Choose, arm)
	}
}

func (dc *decoder) repeatSpec(v *core.JNode) *model.RepeatSpec {
	if !dc.object(v, "repeat") {
		return nil
	}
	r := &model.RepeatSpec{Ptr: v.Ptr}
	dc.fields(v, "repeat", []string{"count", "while", "until", "for_each", "max"})
	if m := v.Get("max"); m != nil {
		r.Max = dc.loopMax(m)
	}
	key, ok := dc.kindKey(v, "repeat", []string{"count", "while", "until", "for_each"})
	if !ok {
		return r
	}
	x := v.Get(key)
	switch key {
	case "count":
		r.Count = dc.loopCount(x)
	case "while", "until":
		e := dc.exprField(x, key)
		if key == "while" {
			r.While = e
		} else {
			r.Until = e
		}
		if v.Get("max") == nil {
			dc.Diags.Add(core.CodeUnboundedLoop, v.Ptr, "add \"max\": 100 (at most the engine limit)", "a %s loop needs max (at most %d iterations)", key, dc.lim.MaxIterations)
		}
	case "for_each":
		r.ForEach = dc.loopItems(x)
	}
	return r
}

// loopMax reads a loop's max (0 when it is not a usable bound).
func (dc *decoder) loopMax(m *core.JNode) int {
	n, ok := dc.integer(m, "max")
	switch {
	case !ok:
	case n < 1:
		dc.Diags.Add(core.CodeConstraint, m.Ptr, "", "max must be at least 1, got %d", n)
	case n > dc.lim.MaxIterations:
		dc.Diags.Add(core.CodeUnboundedLoop, m.Ptr, "", "max %d exceeds the engine's limit of %d iterations", n, dc.lim.MaxIterations)
	default:
		return n
	}
	return 0
}

// loopCount reads a count loop's count: an integer or a "{{ }}" template.
func (dc *decoder) loopCount(x *core.JNode) *model.Template {
	t := dc.template(x)
	if x.Kind == core.JStr {
		if t != nil && t.IsConst {
			dc.Diags.Add(core.CodeTypeMismatch, x.Ptr, "e.g. 3 or \"{{ params.times }}\"", "count must be an integer or a \"{{ }}\" expression")
		}
		return t
	}
	if n, ok := dc.integer(x, "count"); ok {
		switch {
		case n < 0:
			dc.Diags.Add(core.CodeConstraint, x.Ptr, "", "count must not be negative, got %d", n)
		case n > dc.lim.MaxIterations:
			dc.Diags.Add(core.CodeUnboundedLoop, x.Ptr, "", "count %d exceeds the engine's limit of %d iterations", n, dc.lim.MaxIterations)
		}
	}
	return t
}

// loopItems reads a for_each loop's items: an array, or an expression
// (with or without "{{ }}") yielding one.
func (dc *decoder) loopItems(x *core.JNode) *model.Template {
	switch x.Kind {
	case core.JArr:
		if len(x.Vals) > dc.lim.MaxIterations {
			dc.Diags.Add(core.CodeUnboundedLoop, x.Ptr, "", "for_each has %d items, more than the engine's limit of %d iterations", len(x.Vals), dc.lim.MaxIterations)
		}
		return dc.template(x)
	case core.JStr:
		if strings.Contains(x.Str, "{{") {
			return dc.template(x)
		}
		if e := dc.exprField(x, "for_each"); e != nil {
			return &model.Template{Ptr: x.Ptr, Whole: e}
		}
		return nil
	}
	dc.typeErr(x, "for_each", "an array or an expression")
	return nil
}

// ---- field helpers ----

func (dc *decoder) object(n *core.JNode, what string) bool {
	if n == nil {
		return false
	}
	if n.Kind != core.JObj {
		dc.typeErr(n, what, "an object")
		return false
	}
	return true
}

func (dc *decoder) array(n *core.JNode, what string) bool {
	if n == nil {
		return false
	}
	if n.Kind != core.JArr {
		dc.typeErr(n, what, "an array")
		return false
	}
	return true
}

func (dc *decoder) typeErr(n *core.JNode, what, want string) {
	dc.Diags.Add(core.CodeTypeMismatch, n.Ptr, "", "%s must be %s, got %s", what, want, n.Kind)
}

// fields reports members of n not in allowed.
func (dc *decoder) fields(n *core.JNode, what string, allowed []string) {
	for i, k := range n.Keys {
		if slices.Contains(allowed, k) {
			continue
		}
		// A member of another kind is a known word misplaced ("to" on an
		// event trigger), not a typo: say where it belongs rather than the
		// nearest spelling ("id").
		hint := ""
		if home, ok := model.FieldHomes[k]; ok {
			hint = fmt.Sprintf("%q belongs to %s; allowed here: %s", k, home, strings.Join(allowed, ", "))
		} else {
			hint = core.HintFor(core.CloseMatches(k, allowed, 2))
		}
		if hint == "" {
			hint = "allowed here: " + strings.Join(allowed, ", ")
		}
		dc.Diags.Add(core.CodeUnknownField, n.Vals[i].Ptr, hint, "%s has no field %q", what, k)
	}
}

func (dc *decoder) required(n *core.JNode, key, what string) *core.JNode {
	v := n.Get(key)
	if v == nil {
		dc.Diags.Add(core.CodeMissingField, n.Ptr, "", "%s needs %q", what, key)
	}
	return v
}

func (dc *decoder) str(n *core.JNode, what string) (string, bool) {
	if n == nil {
		return "", false
	}
	if n.Kind != core.JStr {
		dc.typeErr(n, what, "a string")
		return "", false
	}
	return n.Str, true
}

func (dc *decoder) boolean(n *core.JNode, what string) (bool, bool) {
	if n.Kind != core.JBool {
		dc.typeErr(n, what, "true or false")
		return false, false
	}
	return n.Bool, true
}

func (dc *decoder) number(n *core.JNode, what string) (float64, bool) {
	if n.Kind != core.JNum {
		dc.typeErr(n, what, "a number")
		return 0, false
	}
	return n.Num, true
}

func (dc *decoder) integer(n *core.JNode, what string) (int, bool) {
	f, ok := dc.number(n, what)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1e9 {
		dc.Diags.Add(core.CodeTypeMismatch, n.Ptr, "", "%s must be an integer, got %g", what, f)
		return 0, false
	}
	return int(f), true
}

// id reads and checks the "id" member of a trigger, condition or step.
func (dc *decoder) id(n *core.JNode) string {
	v := n.Get("id")
	if v == nil {
		dc.Diags.Add(core.CodeMissingField, n.Ptr, "give every trigger, condition and step an \"id\", e.g. \"turn_on\"", "missing \"id\"")
		return ""
	}
	s, ok := dc.str(v, "id")
	if !ok {
		return ""
	}
	switch {
	case s == "" || utf8.RuneCountInString(s) > 64 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 }):
		dc.Diags.Add(core.CodeInvalidID, v.Ptr, "", "id %q must be 1-64 printable characters", s)
	case strings.ContainsAny(s, "#/"):
		dc.Diags.Add(core.CodeReservedChar, v.Ptr, "use '_' or '-' instead", "id %q contains '#' or '/', which are reserved for trace identity", s)
	case s == "triggers":
		dc.Diags.Add(core.CodeReservedID, v.Ptr, "", "id \"triggers\" is reserved: it names the trigger branch in plans and traces")
	default:
		if first, dup := dc.IDs[s]; dup {
			dc.Diags.Add(core.CodeDuplicateID, v.Ptr, "", "id %q is already used at %s", s, first)
		} else {
			dc.IDs[s] = v.Ptr
		}
	}
	return s
}

// constDuration reads a constant duration; neg allows negative values.
func (dc *decoder) constDuration(n *core.JNode, what string, neg bool) time.Duration {
	s, ok := dc.str(n, what)
	if !ok {
		return 0
	}
	if strings.Contains(s, "{{") {
		dc.Diags.Add(core.CodeBadDuration, n.Ptr, "", "%s must be a constant duration here, not an expression", what)
		return 0
	}
	d, err := clock.ParseDuration(s)
	if err != nil {
		dc.Diags.Add(core.CodeBadDuration, n.Ptr, "", "%s: %v", what, err)
		return 0
	}
	if d < 0 && !neg {
		dc.Diags.Add(core.CodeBadDuration, n.Ptr, "", "%s must not be negative", what)
		return 0
	}
	return d
}

// durTemplate reads a duration that may be a "{{ }}" expression.
func (dc *decoder) durTemplate(n *core.JNode, what string) *model.Template {
	s, ok := dc.str(n, what)
	if !ok {
		return nil
	}
	if strings.Contains(s, "{{") {
		return dc.template(n)
	}
	d, err := clock.ParseDuration(s)
	switch {
	case err != nil:
		dc.Diags.Add(core.CodeBadDuration, n.Ptr, "", "%s: %v", what, err)
	case d < 0:
		dc.Diags.Add(core.CodeBadDuration, n.Ptr, "", "%s must not be negative", what)
	}
	return &model.Template{Ptr: n.Ptr, IsConst: true, Const: s}
}

// compile compiles one expression under the decoder's bounds.
func (dc *decoder) compile(src string) (*model.Expr, error) {
	if utf8.RuneCountInString(src) > dc.lim.MaxExprLen {
		dc.fatal = Exhausted(fmt.Sprintf("an expression is longer than %d characters", dc.lim.MaxExprLen))
		return nil, errExprTooBig
	}
	if !dc.checkTime() {
		return nil, errExprTooBig
	}
	x, err := compileExprSafe(dc.cache, src, dc.lim.MaxExprNodes)
	if err != nil && strings.Contains(err.Error(), "exceeds maximum allowed nodes") {
		dc.fatal = Exhausted(fmt.Sprintf("an expression has more than %d nodes", dc.lim.MaxExprNodes))
		return nil, errExprTooBig
	}
	return x, err
}

// compileExprSafe turns a compiler panic into an error: expressions come
// from programs, and nothing a program says may crash the server.
func compileExprSafe(k *model.Cache, src string, maxNodes uint) (x *model.Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			x, err = nil, fmt.Errorf("expression compiler failed: %v", r)
		}
	}()
	return k.CompileExpr(src, maxNodes)
}

func (dc *decoder) badExpr(e *ExprError) {
	if errors.Is(e.Err, errExprTooBig) {
		return
	}
	src := ""
	if n := dc.strAt(e.Ptr); n != "" {
		src = n
	}
	dc.Diags.AddRange(core.CodeBadExpression, e.Ptr, src, e.From, e.To, "", "%v", e.Err)
}

// strAt is set while compiling a string so badExpr can compute ranges.
func (dc *decoder) strAt(string) string { return dc.curStr }

func (dc *decoder) template(n *core.JNode) *model.Template {
	if n.Kind == core.JStr {
		dc.curStr = n.Str
		if strings.Contains(n.Str, "{{") {
			dc.Strs[n.Ptr] = n.Str
		}
		return compileTemplateString(n.Ptr, n.Str, dc.compile, dc.badExpr)
	}
	if n.Kind != core.JObj && n.Kind != core.JArr {
		return &model.Template{Ptr: n.Ptr, IsConst: true, Const: n.Value()}
	}
	t := &model.Template{Ptr: n.Ptr}
	if n.Kind == core.JObj {
		t.Object = make(map[string]*model.Template, len(n.Keys))
		for i, k := range n.Keys {
			t.Object[k] = dc.template(n.Vals[i])
		}
	} else {
		t.Array = make([]*model.Template, len(n.Vals))
		for i, v := range n.Vals {
			t.Array[i] = dc.template(v)
		}
	}
	return constIfPure(t, n.Value())
}

// exprField compiles an expression-typed string field. Fields other than
// for_each are conditions: an expression whose type is known not to be
// boolean is reported.
func (dc *decoder) exprField(n *core.JNode, what string) *model.Expr {
	s, ok := dc.str(n, what)
	if !ok {
		return nil
	}
	dc.curStr = s
	dc.Strs[n.Ptr] = s
	x := bareExpr(n.Ptr, s, dc.compile, dc.badExpr)
	if x != nil && what != "for_each" {
		if t := x.Node().Type(); t != nil && t.Kind() != reflect.Bool && t.Kind() != reflect.Interface {
			dc.Diags.AddRange(core.CodeBadExpression, n.Ptr, s, x.Offset, x.Offset+utf8.RuneCountInString(x.Src),
				"compare it, e.g. \"hour(now()) >= 22\"", "%s must be true or false, but this expression is %s", what, t)
			return nil
		}
	}
	return x
}
