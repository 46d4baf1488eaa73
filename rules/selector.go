package rules

import (
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// Selector addresses catalog entries by their device's area, type or
// tags instead of by id (a call step's "call", a state trigger's
// "state"); see model.Selector.
type Selector = model.Selector

// Selecting is a Catalog or World that resolves selectors itself (the
// engine's scoped views).
type Selecting = model.Selecting

// MaxSelected bounds how many entries a selector may address.
const MaxSelected = model.MaxSelected

// ScanSelect resolves s by visiting ids (sorted) and their entries.
func ScanSelect(ids []string, get func(string) (*pilotage.Entry, bool), kind pilotage.Kind, s *Selector) []string {
	return model.ScanSelect(ids, get, kind, s)
}

// MaxSelectors bounds the selectors of one program.
const MaxSelectors = model.MaxSelectors
