package engine

import (
	"maps"
	"strings"

	"github.com/pilothouse/pilothouse/engine/internal/input"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// A promoted automation's id is "automation.<name>@<hash>": the hash is
// that of its body and of the entries it was validated against, so every
// version stays its own immutable entry. "automation.<name>" without a
// hash names the current version: the one the installed rule of that name
// runs (enabled or not), else the newest promoted one.

// currentAutomation resolves "automation.<name>" (no '@') in v.
func (e *Engine) currentAutomation(v *view, id string) (*pilotage.Entry, bool) {
	name, ok := strings.CutPrefix(id, "automation.")
	if !ok || name == "" || strings.Contains(name, "@") {
		return nil, false
	}
	if e.sched == nil {
		return nil, false
	}
	if ar := e.sched.Rule(name); ar != nil {
		return v.Get(ar.Ref()) // not an older version in its place
	}
	order := e.cat.AutomationIDs()
	prefix := id + "@"
	for i := len(order) - 1; i >= 0; i-- {
		if strings.HasPrefix(order[i], prefix) {
			if en, ok := v.Get(order[i]); ok {
				return en, true
			}
		}
	}
	return nil, false
}

// currentParams resolves, in execute's input, the value of each catalog
// param of kind automation written "automation.<name>" (no hash) to the
// current version's id: the bound program, a deployed rule included,
// keeps that version. Other values are left to binding to judge.
func (e *Engine) currentParams(p *Principal, c *rules.Compiled, params map[string]any) map[string]any {
	var v *view
	out, cloned := params, false
	for _, r := range c.RefParams() {
		s, ok := params[r.Name].(string)
		if r.Kind != pilotage.KindAutomation || !ok || strings.Contains(s, "@") {
			continue
		}
		if v == nil {
			v = e.cat.View(p)
		}
		if _, exact := v.Get(s); exact {
			continue
		}
		if en, ok := e.currentAutomation(v, s); ok {
			if !cloned {
				out, cloned = maps.Clone(params), true
			}
			out[r.Name] = en.ID
		}
	}
	return out
}

// inputOf is execute's input checked against the program's params
// (input.Bind), automations named without a hash resolved (currentParams).
func (e *Engine) inputOf(p *Principal, c *rules.Compiled, req ExecuteRequest) (map[string]any, *rules.Scenario, input.Install, []pilotage.Diagnostic) {
	params, sc, inst, diags := input.Bind(c, req.Input, req.TestRun, !req.TestRun && !req.Once)
	if len(diags) == 0 {
		params = e.currentParams(p, c, params)
	}
	return params, sc, inst, diags
}
