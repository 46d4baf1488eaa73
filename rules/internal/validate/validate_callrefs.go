package validate

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/pilothouse/pilothouse/pilotage"
)

// refArgs checks what a call passes to a promoted automation's
// catalog-reference params: a constant id must be visible and fit (it
// joins the caller's references, so scope and drift follow it);
// "{{ params.<name> }}" passes on the caller's own reference, whose
// constraints must be at least as narrow; anything else is templated_id.
// When every argument is a constant, the automation's body is checked as
// it will run with them (bound, as execute binds a deploy).
func (c *checker) refArgs(s *model.Step, e *pilotage.Entry) {
	refs := model.RefParamsOf(e.InputSchema)
	if len(refs) == 0 {
		return
	}
	for _, name := range core.SortedKeys(refs) {
		r, t := refs[name], s.Args[name]
		path := s.Ptr + "/args/" + core.EscapePtr(name)
		switch mine, passed := templateParam(t); {
		case t == nil && !r.HasDefault:
			c.d.Add(core.CodeBadArguments, s.Ptr, c.fitHint(r), "%s needs argument %q: the id of %s", s.Call, name, r.Describe())
		case t == nil:
		case t.IsConst:
			c.refConst(s.Call, r, t.Const, path)
		case passed && c.refs[mine] != nil && c.refs[mine].Covers(r):
		case passed && c.refs[mine] != nil:
			c.d.Add(core.CodeBadArguments, path, "narrow params."+mine+"'s catalog constraint to at least "+s.Call+"'s: "+r.Decl(),
				"params.%s is %s; %s's %s needs %s", mine, c.refs[mine].Describe(), s.Call, name, r.Describe())
		default:
			c.d.Add(core.CodeTemplatedID, path, `pass an id, or pass on a catalog param of yours declared at least as narrowly, "properties": {`+r.Decl()+`} in params, as "{{ params.`+name+` }}"`,
				"%s's %s is a catalog reference: pass a catalog id, or exactly \"{{ params.<name> }}\" naming a catalog-reference param of this program", s.Call, name)
		}
	}
	c.boundCallee(s)
}

// refConst checks a constant id passed to reference r at path.
func (c *checker) refConst(callee string, r *model.RefParam, v any, path string) {
	id, ok := v.(string)
	if !ok || id == "" {
		c.d.Add(core.CodeBadArguments, path, c.fitHint(r), "%s's %s needs a catalog id (a string), got %s", callee, r.Name, core.CompactJSON(v))
		return
	}
	e, found := c.cat.Get(id)
	why := "it is not in the catalog"
	if found {
		why = c.misfit(r, e)
	}
	if why != "" {
		c.d.Add(core.CodeBadArguments, path, c.fitHint(r), "%q: %s; %s's %s needs %s", id, why, callee, r.Name, r.Describe())
		return
	}
	c.entries[e.ID] = e
}

// templateParam returns the param a template is exactly "{{ params.<name> }}" of.
func templateParam(t *model.Template) (string, bool) {
	if t == nil || t.Whole == nil {
		return "", false
	}
	m, ok := t.Whole.Node().(*ast.MemberNode)
	if !ok {
		return "", false
	}
	root, ok := m.Node.(*ast.IdentifierNode)
	prop, ok2 := m.Property.(*ast.StringNode)
	if !ok || !ok2 || root.Value != "params" {
		return "", false
	}
	return prop.Value, true
}

// boundCallee checks the called automation's body as it will run with
// this call's arguments, when all of them are constants: what binding
// finds is reported at the argument that causes it.
func (c *checker) boundCallee(s *model.Step) {
	sub := c.sub[s.Call]
	if sub == nil || len(sub.RefList) == 0 || len(sub.Raw) == 0 {
		return
	}
	args := make(map[string]any, len(s.Args))
	for k, t := range s.Args {
		if !t.IsConst {
			return
		}
		args[k] = t.Const
	}
	o := c.o
	o.Bind, o.Context, o.Installed = args, nil, nil
	res, err := Validate(sub.Raw, c.cat, o)
	if err != nil {
		c.fatal = err
		return
	}
	for _, d := range res.Diagnostics {
		if d.Severity != pilotage.SeverityError {
			continue
		}
		path := s.Ptr + "/args"
		if d.Path != "" {
			path += d.Path
		}
		if _, ok := s.Args[strings.TrimPrefix(d.Path, "/")]; !ok {
			path = s.Ptr + "/call"
		}
		c.d.Add(core.CodeBadArguments, path, d.Hint, "with these arguments, %s would not run: %s", s.Call, d.Message)
	}
}
