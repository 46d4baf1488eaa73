package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// Binding: Validate with ValidateOptions.Bind checks a program as it will
// run with execute's input. Catalog references ("{{ params.light }}" where
// an id goes) are replaced by the ids they are bound to, and templates
// that read nothing but params ("{{ params.hold }}", "{{ params.level }}")
// by their values; the result is checked like any program, so the real
// ids, arguments, durations, call depth and risk are checked before
// anything runs, and the plan shows them. Findings the input causes are
// input_binding diagnostics located in the input.

// binding is one Validate's bound input.
type binding struct {
	params map[string]any // with defaults filled in
	refs   map[string]*model.RefParam
	sites  []bindSite
	d      core.Diags // findings of the binding itself (input_binding)
	lim    core.Limits
}

// bindSite says that the program value at ptr (and below) comes from a
// param.
type bindSite struct {
	ptr, param string
}

// bindProgram returns a copy of p with its references and params-only
// templates bound to in (p itself is not changed).
func bindProgram(p *model.Program, in map[string]any, lim core.Limits) (*model.Program, *binding) {
	b := &binding{params: interp.WithParamDefaults(p.Params, in), refs: p.RefParams, lim: lim}
	if b.params == nil {
		b.params = map[string]any{}
	}
	q := *p
	q.Triggers = make([]*model.Trigger, len(p.Triggers))
	for i, t := range p.Triggers {
		u := *t
		u.Entity = b.id(t.Entity, t.Ptr, t.Ptr+"/"+entityMember(t))
		b.bindTrigger(&u)
		q.Triggers[i] = &u
	}
	q.Conditions = b.bindConditions(p.Conditions)
	q.Steps = b.steps(p.Steps)
	return &q, b
}

// entityMember is the member holding a trigger's entity id.
func entityMember(t *model.Trigger) string {
	switch t.Kind {
	case model.TriggerEvent:
		return "event"
	case model.TriggerAvailable:
		return "available"
	}
	return "state"
}

func (b *binding) at(ptr, param string) { b.sites = append(b.sites, bindSite{ptr, param}) }

// id binds an id position: "{{ params.<ref> }}" becomes the bound id
// (the site covers scope, the construct it belongs to, and at, the id's
// own value). Anything else stays as written.
func (b *binding) id(s, scope, at string) string {
	name, ok := model.ParamSite(s)
	if !ok || b.refs[name] == nil {
		return s
	}
	id, ok := b.params[name].(string)
	if !ok {
		return s // checkBinding reports it
	}
	b.at(scope, name)
	b.at(at, name)
	return id
}

func (b *binding) steps(list []*model.Step) []*model.Step {
	if list == nil {
		return nil
	}
	out := make([]*model.Step, len(list))
	for i, s := range list {
		out[i] = b.step(s)
	}
	return out
}

func (b *binding) step(s *model.Step) *model.Step {
	u := *s
	switch s.Kind {
	case model.StepCall:
		u.Call = b.id(s.Call, s.Ptr, s.Ptr+"/call")
		u.Args = make(map[string]*model.Template, len(s.Args))
		for k, t := range s.Args {
			u.Args[k] = b.fold(t)
		}
	case model.StepDelay:
		u.Delay = b.duration(s.Delay, "delay")
	case model.StepWait:
		if w := s.Wait; w != nil {
			v := *w
			if w.State != "" {
				v.State = b.id(w.State, w.Ptr, w.Ptr+"/state")
			}
			if w.Event != "" {
				v.Event = b.id(w.Event, w.Ptr, w.Ptr+"/event")
			}
			v.For = b.duration(w.For, "wait for")
			if d := b.bindWait(&v); d > 0 {
				u.Timeout = d
			}
			u.Wait = &v
		}
	case model.StepIf:
		u.Then, u.Else = b.steps(s.Then), b.steps(s.Else)
	case model.StepChoose:
		u.Choose = make([]*model.Arm, len(s.Choose))
		for i, a := range s.Choose {
			c := *a
			c.Do = b.steps(a.Do)
			u.Choose[i] = &c
		}
		u.Default = b.steps(s.Default)
	case model.StepRepeat:
		if r := s.Repeat; r != nil {
			v := *r
			v.Count = b.count(r.Count)
			u.Repeat = &v
		}
		u.Do = b.steps(s.Do)
	}
	return &u
}

// duration folds a templated duration and checks the value it binds to.
func (b *binding) duration(t *model.Template, what string) *model.Template {
	f := b.fold(t)
	if f == nil || f == t || !f.IsConst {
		return f
	}
	d, err := clock.DurationValue(f.Const)
	if err != nil {
		b.misfit(t, "used as the %s at %s, it does not make a duration: %v", what, t.Ptr, err)
		return t
	}
	return &model.Template{Ptr: t.Ptr, IsConst: true, Const: d.String()}
}

// count folds a loop count and checks the value it binds to.
func (b *binding) count(t *model.Template) *model.Template {
	f := b.fold(t)
	if f == nil || f == t || !f.IsConst {
		return f
	}
	n, ok := core.InterpNumber(f.Const)
	switch {
	case !ok || n != float64(int64(n)):
		b.misfit(t, "used as the count at %s, it is not an integer", t.Ptr)
	case n < 0 || n > float64(b.lim.MaxIterations):
		b.misfit(t, "used as the count at %s, it is outside 0..%d (MaxIterations)", t.Ptr, b.lim.MaxIterations)
	default:
		return f
	}
	return t
}

// misfit reports that a params-only template's value cannot be used
// where it stands (at the first param it reads).
func (b *binding) misfit(t *model.Template, format string, args ...any) {
	name := ""
	for _, x := range t.Exprs() {
		if ps := paramsRead(x.Node()); len(ps) > 0 {
			name = ps[0]
			break
		}
	}
	v, _ := t.Eval(b.env())
	b.d.Add(core.CodeInputBinding, "/"+core.EscapePtr(name), "", "%s = %s: "+format, append([]any{name, core.CompactJSON(v)}, args...)...)
}

func (b *binding) env() *model.Env {
	return &model.Env{Params: b.params, ValueBytes: b.lim.MaxValueBytes, EvalBytes: b.lim.MaxEvalBytes}
}

// fold replaces a template that reads nothing but params by its value;
// objects and arrays fold element-wise. A template that does not fold
// (or fails to evaluate: the run will report it) is returned as is.
func (b *binding) fold(t *model.Template) *model.Template {
	switch {
	case t == nil || t.IsConst:
		return t
	case t.Object != nil || t.Array != nil:
		return b.foldComposite(t)
	}
	var names []string
	for _, x := range t.Exprs() {
		ns, ok := paramsOnly(x.Node())
		if !ok {
			return t
		}
		names = append(names, ns...)
	}
	v, err := t.Eval(b.env())
	if err != nil {
		return t
	}
	for _, n := range names {
		b.at(t.Ptr, n)
	}
	return &model.Template{Ptr: t.Ptr, IsConst: true, Const: v}
}

func (b *binding) foldComposite(t *model.Template) *model.Template {
	u := &model.Template{Ptr: t.Ptr}
	if t.Object != nil {
		u.Object = make(map[string]*model.Template, len(t.Object))
		for k, s := range t.Object {
			u.Object[k] = b.fold(s)
		}
	} else {
		u.Array = make([]*model.Template, len(t.Array))
		for i, s := range t.Array {
			u.Array[i] = b.fold(s)
		}
	}
	for _, s := range u.Object {
		if !s.IsConst {
			return u
		}
	}
	for _, s := range u.Array {
		if !s.IsConst {
			return u
		}
	}
	v, err := u.Eval(b.env())
	if err != nil {
		return u
	}
	return &model.Template{Ptr: t.Ptr, IsConst: true, Const: v}
}

// paramsOnly reports whether an expression reads nothing but params and
// calls nothing (so its value is known once params are), and which params
// it reads.
func paramsOnly(root ast.Node) ([]string, bool) {
	ok := true
	ast.Find(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IdentifierNode:
			ok = ok && n.Value == "params"
		case *ast.MemberNode, *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode,
			*ast.BinaryNode, *ast.UnaryNode, *ast.ConditionalNode, *ast.ArrayNode, *ast.MapNode, *ast.PairNode, *ast.ChainNode:
		default:
			ok = false
		}
		return false
	})
	if !ok {
		return nil, false
	}
	return paramsRead(root), true
}

// paramsRead lists the params an expression names (params.<name>), in
// order of appearance, each once.
func paramsRead(root ast.Node) []string {
	var out []string
	ast.Find(root, func(n ast.Node) bool {
		m, ok := n.(*ast.MemberNode)
		if !ok {
			return false
		}
		id, ok := m.Node.(*ast.IdentifierNode)
		prop, ok2 := m.Property.(*ast.StringNode)
		if ok && ok2 && id.Value == "params" && !slices.Contains(out, prop.Value) {
			out = append(out, prop.Value)
		}
		return false
	})
	return out
}

// site returns the param the program value at path comes from: the
// innermost recorded site holding it ("" when none does).
func (b *binding) site(path string) string {
	best, param := -1, ""
	for _, s := range b.sites {
		if (path == s.ptr || strings.HasPrefix(path, s.ptr+"/")) && len(s.ptr) > best {
			best, param = len(s.ptr), s.param
		}
	}
	return param
}

// mapped turns the errors found in the bound program into input_binding
// findings located at the param that caused them; warnings keep their
// place in the program.
func (b *binding) mapped(list []pilotage.Diagnostic) []pilotage.Diagnostic {
	out := b.d.List
	for _, g := range list {
		if g.Severity != pilotage.SeverityError || g.Code == core.CodeInputBinding {
			out = append(out, g)
			continue
		}
		param := b.site(g.Path)
		msg := g.Message + " (at " + g.Path + ")"
		path := ""
		if param != "" {
			path = "/" + core.EscapePtr(param)
			msg = fmt.Sprintf("%s = %s: %s", param, core.CompactJSON(b.params[param]), msg)
		}
		out = append(out, pilotage.Diagnostic{Code: core.CodeInputBinding, Severity: pilotage.SeverityError,
			Message: msg, Path: path, Hint: g.Hint})
	}
	return out
}
