package validate

import (
	"github.com/expr-lang/expr/ast"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// scope is what a point of the program may address (scope rules): vars
// set and steps completed earlier in the same or an enclosing step list.
// A branch arm or loop body gets a child scope that is dropped when the
// construct ends, so values produced inside it are not addressable after.
type scope struct {
	parent *scope
	vars   map[string]bool
	steps  map[string]bool
	loop   bool // inside a repeat body: vars.index is set
	each   bool // inside a for_each body: vars.item is set
}

func (s *scope) child(loop, each bool) *scope {
	return &scope{parent: s, vars: map[string]bool{}, steps: map[string]bool{}, loop: loop || s.loop, each: each || s.each}
}

// loopVar reports whether name is a loop variable set in this scope.
func (s *scope) loopVar(name string) bool {
	return name == "index" && s.loop || name == "item" && s.each
}

func (s *scope) hasVar(name string) bool {
	for ; s != nil; s = s.parent {
		if s.vars[name] {
			return true
		}
	}
	return false
}

func (s *scope) hasStep(id string) bool {
	for ; s != nil; s = s.parent {
		if s.steps[id] {
			return true
		}
	}
	return false
}

func (c *checker) steps(list []*model.Step, sc *scope) {
	for _, s := range list {
		if !c.alive() {
			return
		}
		c.step(s, sc)
		if s.ID != "" {
			sc.steps[s.ID] = true
			c.seenSteps[s.ID] = true
		}
	}
}

func (c *checker) step(s *model.Step, sc *scope) {
	switch s.Kind {
	case model.StepCall:
		for _, k := range core.SortedKeys(s.Args) {
			c.template(s.Args[k], sc)
		}
		c.call(s)
	case model.StepDelay:
		c.template(s.Delay, sc)
	case model.StepWait:
		c.wait(s.Wait, sc)
	case model.StepIf, model.StepChoose:
		c.expr(s.If, sc)
		for ch := range s.Children() {
			c.expr(ch.When, sc)
			c.steps(ch.Steps, sc.child(false, false))
		}
	case model.StepRepeat:
		body := sc.child(true, s.Repeat != nil && s.Repeat.ForEach != nil)
		if r := s.Repeat; r != nil {
			c.template(r.Count, sc)
			c.template(r.ForEach, sc)
			c.expr(r.While, body)
		}
		c.steps(s.Do, body)
		if s.Repeat != nil {
			// until is checked after each iteration: it sees the body.
			c.expr(s.Repeat.Until, body)
		}
	case model.StepSet:
		keys := core.SortedKeys(s.Set)
		for _, k := range keys {
			c.template(s.Set[k], sc)
		}
		for _, k := range keys {
			sc.vars[k] = true
			c.seenVars[k] = true
		}
	}
}

func (c *checker) wait(w *model.WaitSpec, sc *scope) {
	if w == nil {
		return
	}
	c.paramFields(w.Inputs)
	id, member := w.State, "state"
	if id == "" {
		id, member = w.Event, "event"
	}
	if _, tmpl := c.refSite(id, w.Ptr+"/"+member, waitKind(w)); tmpl {
		c.expr(w.Expr, sc)
		c.template(w.For, sc)
		return
	}
	switch {
	case w.State != "":
		if e := c.lookup(w.State, w.Ptr+"/state", nil, "state", pilotage.KindState); e != nil {
			c.filter(e, w.To, w.Ptr+"/to")
			c.filter(e, w.From, w.Ptr+"/from")
			if w.Above != nil || w.Below != nil {
				c.numeric(e, w.Ptr+"/state")
			}
		}
	case w.Event != "":
		if e := c.lookup(w.Event, w.Ptr+"/event", nil, "event", pilotage.KindEvent); e != nil {
			c.eventFilter(e, w.To, w.Ptr+"/value")
		}
	}
	c.expr(w.Expr, sc)
	c.template(w.For, sc)
}

// waitKind is the entry kind a wait's id names.
func waitKind(w *model.WaitSpec) pilotage.Kind {
	if w.State != "" {
		return pilotage.KindState
	}
	return pilotage.KindEvent
}

func (c *checker) call(s *model.Step) {
	if s.Target != nil {
		c.selectCall(s)
		return
	}
	if s.Call == "" {
		return
	}
	path := s.Ptr + "/call"
	if r, tmpl := c.refSite(s.Call, path, pilotage.KindAction, pilotage.KindAutomation); tmpl {
		if r != nil && r.Kind == pilotage.KindAutomation {
			c.callDepth = max(c.callDepth, 1)
		}
		return
	}
	e := c.lookupFor(s.Call, path, nil, "call", true)
	if e == nil {
		return
	}
	if !e.Callable || !pilotage.KindCallable(e.Kind) {
		delete(c.entries, s.Call)
		c.d.Add(core.CodeNotCallable, path, "call an action (e.g. \"hall_light.set\") or a promoted automation", "%q is %s %s entry, which cannot be called", s.Call, core.Article(string(e.Kind)), e.Kind)
		return
	}
	if e.Kind == pilotage.KindAutomation {
		c.automationCall(s, path)
	}
	c.args(s, e)
	if e.Kind == pilotage.KindAutomation {
		c.refArgs(s, e)
	}
}

// automationCall resolves a promoted body and checks how deep the chain
// of calls it starts nests: the run would end limit_exceeded at the call
// that goes past MaxCallDepth, every time, so it is refused here.
func (c *checker) automationCall(s *model.Step, path string) {
	depth := 1
	if c.o.Automation != nil {
		if sub, ok := c.o.Automation(s.Call); ok && sub != nil {
			if c.sub == nil {
				c.sub = map[string]*model.Compiled{}
			}
			c.sub[s.Call] = sub
			depth += sub.CallDepth
		}
	}
	c.callDepth = max(c.callDepth, depth)
	if depth > c.lim.MaxCallDepth {
		c.d.Add(core.CodeCallDepth, path, "call a shallower automation, or inline part of the chain",
			"calling %q nests promoted automations %d deep (its own calls nest %d deep); the limit is %d (MaxCallDepth), so every run would end limit_exceeded",
			s.Call, depth, depth-1, c.lim.MaxCallDepth)
	}
}

func (c *checker) template(t *model.Template, sc *scope) {
	for _, x := range t.Exprs() {
		c.expr(x, sc)
	}
}

// expr checks one compiled expression: catalog references, constant
// entity ids, and the scope of vars.* and steps.*.
func (c *checker) expr(x *model.Expr, sc *scope) {
	if x == nil {
		return
	}
	str := c.strs[x.Ptr]
	rng := func(from, to int) *pilotage.Range {
		return core.StringRange(str, x.Offset+from, x.Offset+to)
	}
	for _, r := range x.Refs {
		c.lookup(r.ID, x.Ptr, rng(r.From, r.To), r.Fn+"() id", pilotage.KindState, pilotage.KindEvent)
	}
	callees := map[ast.Node]bool{}
	ast.Find(x.Node(), func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallNode:
			if id, ok := n.Callee.(*ast.IdentifierNode); ok && model.CatalogReaders[id.Value] {
				callees[id] = true
				c.constantArgs(n, id.Value, x, rng)
			}
		case *ast.MemberNode:
			c.member(n, x, sc, rng)
		}
		return false
	})
	c.dynamicReads(x, callees, rng)
	c.comparisons(x, rng)
}

// constantArgs checks a direct call of a catalog reader: its one argument
// must be a string constant.
func (c *checker) constantArgs(n *ast.CallNode, name string, x *model.Expr, rng func(int, int) *pilotage.Range) {
	if len(n.Arguments) != 1 {
		return
	}
	if model.SelectorReaders[name] && c.exprSelector(n, name, x, rng) {
		return
	}
	from, to := nodeSpan(n.Arguments[0])
	if name == "states" || name == "entities" {
		c.d.Add(core.CodeNonConstantRef, x.Ptr, "write the selector as an object of constants: "+name+"({area: 'hall', tag: 'class:occupancy'})",
			"%s() needs a selector object literal so every state it may read is known before the program runs", name).Range = rng(from, max(to, from+1))
		return
	}
	if _, ok := n.Arguments[0].(*ast.StringNode); ok || c.refArg(name, n.Arguments[0], x, rng) {
		return
	}
	c.d.Add(core.CodeNonConstantRef, x.Ptr, "write the id as a string constant: "+name+"('hall_motion.occupancy'), or pass it as a catalog-reference param: "+name+"(params.sensor) with \"sensor\": {\"type\": \"string\", \"catalog\": {\"kind\": \"state\"}} in params",
		"%s() needs a string constant so every reference is known before the program runs", name).Range = rng(from, max(to, from+1))
}

// dynamicReads refuses every other way to reach a catalog reader: using it
// as a value (let s = state; s('…'), passing it on, a computed callee)
// and $env, which names the environment's members by computed keys.
func (c *checker) dynamicReads(x *model.Expr, callees map[ast.Node]bool, rng func(int, int) *pilotage.Range) {
	ast.Find(x.Node(), func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		if !ok || callees[n] {
			return false
		}
		l := id.Location()
		switch {
		case id.Value == "$env":
			c.d.Add(core.CodeNonConstantRef, x.Ptr, "name what you read directly: state('hall_motion.occupancy'), vars.x, params.x, trigger.value",
				"$env reaches the environment (and state()) by computed names, so the references would not be known before the program runs").Range = rng(l.From, max(l.To, l.From+len(id.Value)))
		case model.CatalogReaders[id.Value]:
			c.d.Add(core.CodeNonConstantRef, x.Ptr, "call it directly with a string constant: "+id.Value+"('hall_motion.occupancy')",
				"%s may only be called directly with a string constant; used as a value it could read any entry", id.Value).Range = rng(l.From, max(l.To, l.From+len(id.Value)))
		}
		return false
	})
}

// nodeSpan is the rune range of n and everything below it (a node's own
// location is its operator or first token).
func nodeSpan(n ast.Node) (from, to int) {
	from, to = n.Location().From, n.Location().To
	ast.Find(n, func(d ast.Node) bool {
		l := d.Location()
		if l.To == 0 { // made by a patch, not parsed
			return false
		}
		if l.From < from {
			from = l.From
		}
		to = max(to, l.To)
		return false
	})
	return from, to
}

func (c *checker) member(n *ast.MemberNode, x *model.Expr, sc *scope, rng func(int, int) *pilotage.Range) {
	root, ok := n.Node.(*ast.IdentifierNode)
	if !ok {
		return
	}
	prop, ok := n.Property.(*ast.StringNode)
	if !ok {
		return
	}
	l := root.Location()
	r := rng(l.From, max(prop.Location().To, l.From+len(root.Value)+1+len(prop.Value)))
	switch root.Value {
	case "params":
		if c.paramNames != nil && !c.paramNames[prop.Value] {
			hint := "declare it: \"params\": {\"type\": \"object\", \"properties\": {\"" + prop.Value + "\": {...}}}"
			if m := core.CloseMatches(prop.Value, core.SortedKeys(c.paramNames), 1); len(m) > 0 {
				hint = core.HintFor(m)
			}
			c.d.Add(core.CodeBadParams, x.Ptr, hint, "params.%s is not declared in the program's params schema", prop.Value).Range = r
		}
	case "vars":
		switch {
		case sc.hasVar(prop.Value) || sc.loopVar(prop.Value):
		case prop.Value == "index" || prop.Value == "item":
			c.d.Add(core.CodeScope, x.Ptr, "vars.index is set in every repeat body, vars.item in for_each bodies", "vars.%s is only addressable inside a repeat body that sets it", prop.Value).Range = r
		case c.seenVars[prop.Value]:
			c.d.Add(core.CodeScope, x.Ptr, "set a default before the branch or loop (e.g. {\"set\": {\""+prop.Value+"\": null}}) so it is addressable here", "vars.%s is set inside a branch arm or loop body that has ended; it is not addressable here", prop.Value).Range = r
		default:
			c.d.Add(core.CodeScope, x.Ptr, "set it with a set step before this point", "vars.%s is not set by any earlier step in scope", prop.Value).Range = r
		}
	case "steps":
		id := prop.Value
		switch {
		case sc.hasStep(id):
		case c.seenSteps[id]:
			c.d.Add(core.CodeScope, x.Ptr, "copy the value into a variable set before the branch or loop", "steps.%s ran inside a branch arm or loop body that has ended; its output is not addressable here", id).Range = r
		default:
			_, exists := c.allIDs[id]
			msg := "steps.%s names no step"
			if exists {
				msg = "steps.%s has not run at this point (a later step, itself, or a trigger/condition id)"
			}
			c.d.Add(core.CodeUnknownStep, x.Ptr, "", msg, id).Range = r
		}
	}
}
