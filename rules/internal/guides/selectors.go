package guides

import (
	"strings"

	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// selectorTable writes the selector members (model.SelectorMembers).
func selectorTable(w writeFunc) {
	m := model.SelectorMembers
	w("\n## Selectors\n\nAn object where an id goes addresses entries by their device: ")
	w("in a call step's `call` (actions) and a state or numeric trigger's `state` (states).\n\n")
	w("| where | names the entry | device filters (at least one, constants) |\n|---|---|---|\n")
	w("| `call` | `%s` | %s |\n", m.Call, codeList(m.Filters))
	w("| trigger `state` | `%s` | %s |\n", m.Property, codeList(m.Filters))
	w("\n`area` matches the `area:<x>` tag (any case), `type` the device's `type:<x>`, `tag` any tag exactly. ")
	w("Resolved at every run in the rule owner's scope (at most %d entries; at most %d selectors per program); a trigger by selector that holds (`for`) holds each state on its own, as Home Assistant does for a list of entities: it fires for the one that stayed, named by `trigger.entity`.\n", model.MaxSelected, model.MaxSelectors)
}

// codeList writes ss as code spans separated by commas.
func codeList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, ", ")
}
