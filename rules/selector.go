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

// selectorTable writes the selector members (model.SelectorMembers).
func selectorTable(w writeFunc) {
	m := model.SelectorMembers
	w("\n## Selectors\n\nAn object where an id goes addresses entries by their device: ")
	w("in a call step's `call` (actions) and a state or numeric trigger's `state` (states).\n\n")
	w("| where | names the entry | device filters (at least one, constants) |\n|---|---|---|\n")
	w("| `call` | `%s` | %s |\n", m.Call, codeList(m.Filters))
	w("| trigger `state` | `%s` | %s |\n", m.Property, codeList(m.Filters))
	w("\n`area` matches the `area:<x>` tag (any case), `type` the device's `type:<x>`, `tag` any tag exactly. ")
	w("Resolved at every run in the rule owner's scope (at most %d entries; at most %d selectors per program); a trigger by selector cannot hold (`for`).\n", MaxSelected, MaxSelectors)
}

// MaxSelectors bounds the selectors of one program.
const MaxSelectors = model.MaxSelectors
