package engine

import (
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
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
	if ar := e.sched.ruleByName(name); ar != nil {
		return v.Get(ar.ref) // not an older version in its place
	}
	e.cat.mu.Lock()
	order := e.cat.autoOrder
	e.cat.mu.Unlock()
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
