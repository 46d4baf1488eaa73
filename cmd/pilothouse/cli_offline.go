package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/pilotclient"
)

// maxOfflineLookups bounds the trigger entities pilothouse rules looks up
// to say which devices are offline.
const maxOfflineLookups = 200

// offlineTriggers maps each trigger entity of the rules whose device says
// it is offline now to that device, as the web rule page tells: looked up
// once each (lookup get: the entry's device tag, the live availability),
// at most maxOfflineLookups; one that cannot be looked up is left out.
func offlineTriggers(ctx context.Context, c *pilotclient.Client, list []pilotage.RuleInfo) map[string]string {
	out := map[string]string{}
	seen := map[string]bool{}
	for _, r := range list {
		for _, t := range r.Triggers {
			if t.Entity == "" || seen[t.Entity] || len(seen) >= maxOfflineLookups {
				continue
			}
			seen[t.Entity] = true
			g, err := c.Get(ctx, t.Entity)
			if err != nil || g.Entry == nil {
				continue
			}
			var live pilotage.Live
			if json.Unmarshal(g.Live, &live) != nil || live.Available == nil || *live.Available {
				continue
			}
			dev, _, _ := strings.Cut(t.Entity, ".")
			for _, tag := range g.Entry.Tags {
				if d, ok := strings.CutPrefix(tag, "device:"); ok {
					dev = d
				}
			}
			out[t.Entity] = dev
		}
	}
	return out
}
