package rules

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/pilotage"
)

// guideHelperDefs are the helpers the guides' recipes declare in their
// ```helpers blocks (one definition per line, as pilothouse_helpers
// create takes it).
func guideHelperDefs() ([]helpers.Def, error) {
	var out []helpers.Def
	for _, g := range Guides() {
		for _, part := range strings.Split(g.Body, "```helpers\n")[1:] {
			block, _, _ := strings.Cut(part, "```")
			for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
				var d helpers.Def
				if err := json.Unmarshal([]byte(line), &d); err != nil {
					return nil, err
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// guideHelperEntries are the catalog entries of the guides' helpers, as
// the helpers package serves them in a real catalog.
var guideHelperEntries = sync.OnceValue(func() []pilotage.Entry {
	defs, err := guideHelperDefs()
	if err != nil {
		panic("a guide's helper does not read: " + err.Error())
	}
	cat := devices.NewCatalog(devices.Options{})
	m := helpers.New(helpers.Options{Catalog: cat})
	if err := m.Start(context.Background(), defs); err != nil {
		panic("a guide's helper is refused: " + err.Error())
	}
	defer m.Close()
	var out []pilotage.Entry
	for _, e := range cat.Snapshot().Entries() {
		out = append(out, *e)
	}
	return out
})

// withGuideHelpers adds the guides' helpers to c (copies: tests may
// change an entry's tags).
func withGuideHelpers(c *mapCatalog) *mapCatalog {
	for _, e := range guideHelperEntries() {
		e := e
		c.m[e.ID] = &e
		c.ids = append(c.ids, e.ID)
	}
	sort.Strings(c.ids)
	return c
}
