package rules

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
)

func (dc *decoder) stepList(n *jnode, depth int) []*Step {
	if !dc.array(n, "a step list") {
		return nil
	}
	if depth > dc.lim.MaxDepth {
		dc.fatal = exhausted(fmt.Sprintf("steps nest deeper than %d levels (at %s)", dc.lim.MaxDepth, n.ptr))
		return nil
	}
	out := make([]*Step, 0, len(n.vals))
	for _, v := range n.vals {
		if s := dc.step(v, depth); s != nil {
			out = append(out, s)
		}
		if dc.fatal != nil {
			return out
		}
	}
	return out
}

func (dc *decoder) step(n *jnode, depth int) *Step {
	if !dc.checkTime() || !dc.object(n, "step") {
		return nil
	}
	s := &Step{Ptr: n.ptr, ID: dc.id(n)}
	key, ok := dc.kindKey(n, "a step", stepKeys)
	if !ok {
		dc.fields(n, "a step", allStepFields)
		return s
	}
	s.Kind = StepKind(key)
	row, _ := stepKind(s.Kind)
	dc.fields(n, "a "+key+" step", row.Members)
	v := n.get(key)
	switch s.Kind {
	case StepCall:
		if v != nil && v.kind == jObj {
			s.Target = dc.selector(v, "call", SelectorMembers.Call)
		} else {
			s.Call, _ = dc.str(v, "call")
		}
		s.Args = map[string]*Template{}
		if a := n.get("args"); a != nil && dc.object(a, "args") {
			for i, k := range a.keys {
				s.Args[k] = dc.template(a.vals[i])
			}
		}
		if c := n.get("continue_on_error"); c != nil {
			s.ContinueOnError, _ = dc.boolean(c, "continue_on_error")
		}
	case StepDelay:
		s.Delay = dc.durTemplate(v, "delay")
	case StepWait:
		dc.waitStep(n, s)
	case StepIf:
		s.If = dc.exprField(v, "if")
		if t := dc.required(n, "then", "an if step"); t != nil {
			s.Then = dc.stepList(t, depth+1)
		}
		if e := n.get("else"); e != nil {
			s.Else = dc.stepList(e, depth+1)
		}
	case StepChoose:
		dc.chooseStep(n, s, depth)
	case StepRepeat:
		s.Repeat = dc.repeatSpec(v)
		if d := dc.required(n, "do", "a repeat step"); d != nil {
			s.Do = dc.stepList(d, depth+1)
		}
	case StepSet:
		dc.setStep(v, s)
	case StepStop:
		s.Stop, _ = dc.str(v, "stop")
		if e := n.get("error"); e != nil {
			s.Error, _ = dc.boolean(e, "error")
		}
	}
	return s
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

func (dc *decoder) setStep(v *jnode, s *Step) {
	s.Set = map[string]*Template{}
	if !dc.object(v, "set") {
		return
	}
	if len(v.keys) == 0 {
		dc.d.add(CodeMissingField, v.ptr, "e.g. {\"set\": {\"count\": 0}}", "set needs at least one variable")
	}
	for i, k := range v.keys {
		if !varNameRE.MatchString(k) {
			dc.d.add(CodeInvalidID, v.vals[i].ptr, "variable names are identifiers, e.g. \"level\" or \"last_seen\"", "variable name %q is not an identifier", k)
			continue
		}
		s.Set[k] = dc.template(v.vals[i])
	}
}

func (dc *decoder) waitStep(n *jnode, s *Step) {
	v := n.get("wait")
	if t := n.get("timeout"); t != nil {
		s.Timeout = dc.constDuration(t, "timeout", false)
	}
	if c := n.get("continue_on_timeout"); c != nil {
		s.ContinueOnTimeout, _ = dc.boolean(c, "continue_on_timeout")
		if n.get("timeout") == nil {
			dc.d.add(CodeConstraint, c.ptr, "add \"timeout\": \"30m\" or drop continue_on_timeout", "continue_on_timeout needs a timeout")
		}
	}
	if !dc.object(v, "wait") {
		return
	}
	w := &WaitSpec{Ptr: v.ptr}
	s.Wait = w
	key, ok := dc.kindKey(v, "a wait", []string{"state", "event", "expr"})
	if !ok {
		return
	}
	switch key {
	case "state":
		w.State, _ = dc.str(v.get("state"), "state")
		if v.get("above") != nil || v.get("below") != nil {
			dc.fields(v, "a numeric wait", []string{"state", "above", "below", "for"})
			w.Above, w.Below = dc.bounds(v)
		} else {
			dc.fields(v, "a state wait", []string{"state", "to", "from", "for"})
			w.To, w.From = jvalue(v.get("to")), jvalue(v.get("from"))
		}
	case "event":
		dc.fields(v, "an event wait", []string{"event", "value"})
		w.Event, _ = dc.str(v.get("event"), "event")
		w.To = jvalue(v.get("value"))
	case "expr":
		dc.fields(v, "an expression wait", []string{"expr", "for"})
		w.Expr = dc.exprField(v.get("expr"), "expr")
	}
	if f := v.get("for"); f != nil && key != "event" {
		w.For = dc.durTemplate(f, "for")
	}
}

func (dc *decoder) chooseStep(n *jnode, s *Step, depth int) {
	v := n.get("choose")
	if d := n.get("default"); d != nil {
		s.Default = dc.stepList(d, depth+1)
	}
	if !dc.array(v, "choose") {
		return
	}
	if len(v.vals) == 0 {
		dc.d.add(CodeMissingField, v.ptr, "", "choose needs at least one arm {\"when\": ..., \"do\": [...]}")
	}
	labels := map[string]bool{}
	for i, a := range v.vals {
		if !dc.object(a, "a choose arm") {
			continue
		}
		dc.fields(a, "a choose arm", []string{"label", "when", "do"})
		arm := &Arm{Ptr: a.ptr, Label: fmt.Sprintf("arm%d", i+1)}
		if l := a.get("label"); l != nil {
			if lbl, ok := dc.str(l, "label"); ok {
				switch {
				case lbl == "" || strings.ContainsAny(lbl, "#/") || utf8.RuneCountInString(lbl) > 64:
					dc.d.add(CodeInvalidID, l.ptr, "", "arm label %q must be 1-64 characters without '#' or '/'", lbl)
				case lbl == LabelDefault:
					dc.d.add(CodeDuplicateLabel, l.ptr, "", "label %q is reserved for the choose step's default arm", lbl)
				default:
					arm.Label = lbl
				}
			}
		}
		if labels[arm.Label] {
			dc.d.add(CodeDuplicateLabel, a.ptr, "", "two arms of this choose step are labelled %q", arm.Label)
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

func (dc *decoder) repeatSpec(v *jnode) *RepeatSpec {
	if !dc.object(v, "repeat") {
		return nil
	}
	r := &RepeatSpec{Ptr: v.ptr}
	dc.fields(v, "repeat", []string{"count", "while", "until", "for_each", "max"})
	if m := v.get("max"); m != nil {
		r.Max = dc.loopMax(m)
	}
	key, ok := dc.kindKey(v, "repeat", []string{"count", "while", "until", "for_each"})
	if !ok {
		return r
	}
	x := v.get(key)
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
		if v.get("max") == nil {
			dc.d.add(CodeUnboundedLoop, v.ptr, "add \"max\": 100 (at most the engine limit)", "a %s loop needs max (at most %d iterations)", key, dc.lim.MaxIterations)
		}
	case "for_each":
		r.ForEach = dc.loopItems(x)
	}
	return r
}

// loopMax reads a loop's max (0 when it is not a usable bound).
func (dc *decoder) loopMax(m *jnode) int {
	n, ok := dc.integer(m, "max")
	switch {
	case !ok:
	case n < 1:
		dc.d.add(CodeConstraint, m.ptr, "", "max must be at least 1, got %d", n)
	case n > dc.lim.MaxIterations:
		dc.d.add(CodeUnboundedLoop, m.ptr, "", "max %d exceeds the engine's limit of %d iterations", n, dc.lim.MaxIterations)
	default:
		return n
	}
	return 0
}

// loopCount reads a count loop's count: an integer or a "{{ }}" template.
func (dc *decoder) loopCount(x *jnode) *Template {
	t := dc.template(x)
	if x.kind == jStr {
		if t != nil && t.IsConst {
			dc.d.add(CodeTypeMismatch, x.ptr, "e.g. 3 or \"{{ params.times }}\"", "count must be an integer or a \"{{ }}\" expression")
		}
		return t
	}
	if n, ok := dc.integer(x, "count"); ok {
		switch {
		case n < 0:
			dc.d.add(CodeConstraint, x.ptr, "", "count must not be negative, got %d", n)
		case n > dc.lim.MaxIterations:
			dc.d.add(CodeUnboundedLoop, x.ptr, "", "count %d exceeds the engine's limit of %d iterations", n, dc.lim.MaxIterations)
		}
	}
	return t
}

// loopItems reads a for_each loop's items: an array, or an expression
// (with or without "{{ }}") yielding one.
func (dc *decoder) loopItems(x *jnode) *Template {
	switch x.kind {
	case jArr:
		if len(x.vals) > dc.lim.MaxIterations {
			dc.d.add(CodeUnboundedLoop, x.ptr, "", "for_each has %d items, more than the engine's limit of %d iterations", len(x.vals), dc.lim.MaxIterations)
		}
		return dc.template(x)
	case jStr:
		if strings.Contains(x.str, "{{") {
			return dc.template(x)
		}
		if e := dc.exprField(x, "for_each"); e != nil {
			return &Template{Ptr: x.ptr, Whole: e}
		}
		return nil
	}
	dc.typeErr(x, "for_each", "an array or an expression")
	return nil
}

// ---- field helpers ----

func (dc *decoder) object(n *jnode, what string) bool {
	if n == nil {
		return false
	}
	if n.kind != jObj {
		dc.typeErr(n, what, "an object")
		return false
	}
	return true
}

func (dc *decoder) array(n *jnode, what string) bool {
	if n == nil {
		return false
	}
	if n.kind != jArr {
		dc.typeErr(n, what, "an array")
		return false
	}
	return true
}

func (dc *decoder) typeErr(n *jnode, what, want string) {
	dc.d.add(CodeTypeMismatch, n.ptr, "", "%s must be %s, got %s", what, want, n.kind)
}

// fields reports members of n not in allowed.
func (dc *decoder) fields(n *jnode, what string, allowed []string) {
	for i, k := range n.keys {
		if slices.Contains(allowed, k) {
			continue
		}
		hint := hintFor(closeMatches(k, allowed, 2))
		if home, ok := fieldHomes[k]; ok && hint == "" {
			hint = fmt.Sprintf("%q belongs to %s; allowed here: %s", k, home, strings.Join(allowed, ", "))
		}
		if hint == "" {
			hint = "allowed here: " + strings.Join(allowed, ", ")
		}
		dc.d.add(CodeUnknownField, n.vals[i].ptr, hint, "%s has no field %q", what, k)
	}
}

func (dc *decoder) required(n *jnode, key, what string) *jnode {
	v := n.get(key)
	if v == nil {
		dc.d.add(CodeMissingField, n.ptr, "", "%s needs %q", what, key)
	}
	return v
}

func (dc *decoder) str(n *jnode, what string) (string, bool) {
	if n == nil {
		return "", false
	}
	if n.kind != jStr {
		dc.typeErr(n, what, "a string")
		return "", false
	}
	return n.str, true
}

func (dc *decoder) boolean(n *jnode, what string) (bool, bool) {
	if n.kind != jBool {
		dc.typeErr(n, what, "true or false")
		return false, false
	}
	return n.b, true
}

func (dc *decoder) number(n *jnode, what string) (float64, bool) {
	if n.kind != jNum {
		dc.typeErr(n, what, "a number")
		return 0, false
	}
	return n.num, true
}

func (dc *decoder) integer(n *jnode, what string) (int, bool) {
	f, ok := dc.number(n, what)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1e9 {
		dc.d.add(CodeTypeMismatch, n.ptr, "", "%s must be an integer, got %g", what, f)
		return 0, false
	}
	return int(f), true
}

// id reads and checks the "id" member of a trigger, condition or step.
func (dc *decoder) id(n *jnode) string {
	v := n.get("id")
	if v == nil {
		dc.d.add(CodeMissingField, n.ptr, "give every trigger, condition and step an \"id\", e.g. \"turn_on\"", "missing \"id\"")
		return ""
	}
	s, ok := dc.str(v, "id")
	if !ok {
		return ""
	}
	switch {
	case s == "" || utf8.RuneCountInString(s) > 64 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 }):
		dc.d.add(CodeInvalidID, v.ptr, "", "id %q must be 1-64 printable characters", s)
	case strings.ContainsAny(s, "#/"):
		dc.d.add(CodeReservedChar, v.ptr, "use '_' or '-' instead", "id %q contains '#' or '/', which are reserved for trace identity", s)
	case s == "triggers":
		dc.d.add(CodeReservedID, v.ptr, "", "id \"triggers\" is reserved: it names the trigger branch in plans and traces")
	default:
		if first, dup := dc.ids[s]; dup {
			dc.d.add(CodeDuplicateID, v.ptr, "", "id %q is already used at %s", s, first)
		} else {
			dc.ids[s] = v.ptr
		}
	}
	return s
}

// constDuration reads a constant duration; neg allows negative values.
func (dc *decoder) constDuration(n *jnode, what string, neg bool) time.Duration {
	s, ok := dc.str(n, what)
	if !ok {
		return 0
	}
	if strings.Contains(s, "{{") {
		dc.d.add(CodeBadDuration, n.ptr, "", "%s must be a constant duration here, not an expression", what)
		return 0
	}
	d, err := ParseDuration(s)
	if err != nil {
		dc.d.add(CodeBadDuration, n.ptr, "", "%s: %v", what, err)
		return 0
	}
	if d < 0 && !neg {
		dc.d.add(CodeBadDuration, n.ptr, "", "%s must not be negative", what)
		return 0
	}
	return d
}

// durTemplate reads a duration that may be a "{{ }}" expression.
func (dc *decoder) durTemplate(n *jnode, what string) *Template {
	s, ok := dc.str(n, what)
	if !ok {
		return nil
	}
	if strings.Contains(s, "{{") {
		return dc.template(n)
	}
	d, err := ParseDuration(s)
	switch {
	case err != nil:
		dc.d.add(CodeBadDuration, n.ptr, "", "%s: %v", what, err)
	case d < 0:
		dc.d.add(CodeBadDuration, n.ptr, "", "%s must not be negative", what)
	}
	return &Template{Ptr: n.ptr, IsConst: true, Const: s}
}

// compile compiles one expression under the decoder's bounds.
func (dc *decoder) compile(src string) (*Expr, error) {
	if utf8.RuneCountInString(src) > dc.lim.MaxExprLen {
		dc.fatal = exhausted(fmt.Sprintf("an expression is longer than %d characters", dc.lim.MaxExprLen))
		return nil, errExprTooBig
	}
	if !dc.checkTime() {
		return nil, errExprTooBig
	}
	x, err := compileExprSafe(dc.cache, src, dc.lim.MaxExprNodes)
	if err != nil && strings.Contains(err.Error(), "exceeds maximum allowed nodes") {
		dc.fatal = exhausted(fmt.Sprintf("an expression has more than %d nodes", dc.lim.MaxExprNodes))
		return nil, errExprTooBig
	}
	return x, err
}

// compileExprSafe turns a compiler panic into an error: expressions come
// from programs, and nothing a program says may crash the server.
func compileExprSafe(k *Cache, src string, maxNodes uint) (x *Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			x, err = nil, fmt.Errorf("expression compiler failed: %v", r)
		}
	}()
	return k.compileExpr(src, maxNodes)
}

func (dc *decoder) badExpr(e *ExprError) {
	if errors.Is(e.Err, errExprTooBig) {
		return
	}
	src := ""
	if n := dc.strAt(e.Ptr); n != "" {
		src = n
	}
	dc.d.addRange(CodeBadExpression, e.Ptr, src, e.From, e.To, "", "%v", e.Err)
}

// strAt is set while compiling a string so badExpr can compute ranges.
func (dc *decoder) strAt(string) string { return dc.curStr }

func (dc *decoder) template(n *jnode) *Template {
	if n.kind == jStr {
		dc.curStr = n.str
		if strings.Contains(n.str, "{{") {
			dc.strs[n.ptr] = n.str
		}
		return compileTemplateString(n.ptr, n.str, dc.compile, dc.badExpr)
	}
	if n.kind != jObj && n.kind != jArr {
		return &Template{Ptr: n.ptr, IsConst: true, Const: n.value()}
	}
	t := &Template{Ptr: n.ptr}
	if n.kind == jObj {
		t.Object = make(map[string]*Template, len(n.keys))
		for i, k := range n.keys {
			t.Object[k] = dc.template(n.vals[i])
		}
	} else {
		t.Array = make([]*Template, len(n.vals))
		for i, v := range n.vals {
			t.Array[i] = dc.template(v)
		}
	}
	return constIfPure(t, n.value())
}

// exprField compiles an expression-typed string field. Fields other than
// for_each are conditions: an expression whose type is known not to be
// boolean is reported.
func (dc *decoder) exprField(n *jnode, what string) *Expr {
	s, ok := dc.str(n, what)
	if !ok {
		return nil
	}
	dc.curStr = s
	dc.strs[n.ptr] = s
	x := bareExpr(n.ptr, s, dc.compile, dc.badExpr)
	if x != nil && what != "for_each" {
		if t := x.Node().Type(); t != nil && t.Kind() != reflect.Bool && t.Kind() != reflect.Interface {
			dc.d.addRange(CodeBadExpression, n.ptr, s, x.Offset, x.Offset+utf8.RuneCountInString(x.Src),
				"compare it, e.g. \"hour(now()) >= 22\"", "%s must be true or false, but this expression is %s", what, t)
			return nil
		}
	}
	return x
}
