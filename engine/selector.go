package engine

import (
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Selectors (calls and triggers by area, type or tag) are resolved
// against a principal's view, so a rule owner's selector never reaches
// past its scope, and again whenever the catalog moves, so a device
// swapped into an area is addressed without a redeploy.

// Select resolves a selector in the firing's owner's scope, now.
func (w *liveWorld) Select(kind pilotage.Kind, sel *rules.Selector) []string {
	return w.e.cat.View(w.p).Select(kind, sel)
}

// selected returns the triggers by selector watching state id, resolved
// in each rule owner's view of the catalog now.
func (s *scheduler) selected(id string) []*armedTrigger {
	s.mu.RLock()
	trigs, ver := s.selIdx.Snapshot()
	s.mu.RUnlock()
	if len(trigs) == 0 {
		return nil
	}
	var gen uint64
	if snap := s.e.cat.DevSnapshot(); snap != nil {
		gen = snap.Gen
	}
	return s.selIdx.Lookup(id, trigs, ver, gen, func(at *armedTrigger) []string {
		return s.e.cat.View(at.r.principal).Select(pilotage.KindState, at.t.Selector())
	})
}
