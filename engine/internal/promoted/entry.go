package promoted

import (
	"bytes"
	"encoding/json"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Shared by every automation entry (entries are never modified in place):
// a house with thousands of rules holds one copy, not thousands.
var (
	noParamsSchema      = json.RawMessage(`{"additionalProperties":false,"type":"object"}`) // canonical
	automationLanguages = []string{rules.Language}
)

// Entry builds the catalog entry of a promoted program. Its risk is the
// body's aggregate: never safer than what it contains.
func Entry(ref string, c *rules.Compiled, plan *pilotage.Plan) *pilotage.Entry {
	schema := noParamsSchema
	if len(bytes.TrimSpace(c.Params())) > 0 {
		schema = pilotage.CanonicalJSON(c.Params())
	}
	hints := pilotage.RiskHints{ReadOnly: true}
	if plan != nil {
		hints = plan.MaxRiskHints
	}
	// The tag and a default description are cut from one string, and the
	// tag list is allocated with the entry: a house holds one entry per
	// promoted program, and each object is work for the collector.
	name := c.Name()
	tag, desc := "rule:"+name, c.Description()
	if desc == "" {
		both := "rule:" + name + "promoted automation/1 program " + name
		tag, desc = both[:len("rule:")+len(name)], both[len("rule:")+len(name):]
	}
	a := &entryAlloc{}
	a.tags[0] = tag
	en := &a.entry
	*en = pilotage.Entry{
		ID: ref, Kind: pilotage.KindAutomation, Name: name, Description: desc,
		Tags: a.tags[:], Callable: true, InputSchema: schema,
		Risk: pilotage.RiskOf(hints), RiskHints: hints, Languages: automationLanguages,
	}
	en.Revision = en.ContentHash()
	return en
}

// entryAlloc is an automation entry allocated with its tags.
type entryAlloc struct {
	entry pilotage.Entry
	tags  [1]string
}
