package sim

import (
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// SetSelectBase makes a test run resolve selectors as a live run would,
// against the caller's catalog (nil: the set validation found).
func (w *SimWorld) SetSelectBase(f func(kind pilotage.Kind, s *model.Selector) []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.selectBase = f
}

// Select implements model.Selecting for a test run.
func (w *SimWorld) Select(kind pilotage.Kind, s *model.Selector) []string {
	w.mu.Lock()
	f := w.selectBase
	w.mu.Unlock()
	if f == nil {
		return s.Resolved
	}
	return f(kind, s)
}
