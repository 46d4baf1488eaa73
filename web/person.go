package web

import (
	"regexp"

	"github.com/pilothouse/pilothouse/pilotage"
)

// A diagnostic's hint tells an assistant which tool to use; a person in
// the editor uses pages instead. personHints says each such hint as the
// pages do, in order.
var personHints = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`look it up with pilotage_lookup \([^)]*\)`), "find it on the Devices page"},
	{regexp.MustCompile(`(find one|look) with pilotage_lookup \([^)]*\)`), "$1 on the Devices page"},
	{regexp.MustCompile(` \(see pilotage_lookup get\)`), " (a device's page shows them)"},
	{regexp.MustCompile(`pilotage_lookup list with tag "area:<x>" or "type:<x>" shows`), "the Devices page shows by area and type"},
	{regexp.MustCompile(`pilotage_lookup lists them`), "the Devices page lists them"},
}

// replacedRuleHint is replaced_rule's hint for a person: the editor
// replaces a rule from its page's Edit, not with input.install.replace.
const replacedRuleHint = `to change the installed rule, use Edit on its page; to keep both, give this program another "name"`

// forPerson is ds with the hints said as the web's pages do.
func forPerson(ds []pilotage.Diagnostic) []pilotage.Diagnostic {
	out := make([]pilotage.Diagnostic, len(ds))
	for i, d := range ds {
		if d.Code == "replaced_rule" {
			d.Hint = replacedRuleHint
		}
		for _, h := range personHints {
			d.Hint = h.re.ReplaceAllString(d.Hint, h.with)
		}
		out[i] = d
	}
	return out
}
