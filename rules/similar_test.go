package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestCloseMatchesRankBySimilarity: suggestions come most similar first
// (transpositions are one edit, separators are alike, a prefix up to a
// separator matches, a longer common start wins a tie), not in the
// alphabet's order.
func TestCloseMatchesRankBySimilarity(t *testing.T) {
	ids := demoCatalog().IDs()
	for _, tc := range []struct {
		q          string
		candidates []string
		first      string
	}{
		{"hall_ligth", ids, "hall_light"},
		{"hall_ligth", []string{"hall_lig", "hall_light"}, "hall_light"},
		{"hall_ligth.set", ids, "hall_light.set"},
		{"hall_light.sett", ids, "hall_light.set"},
		{"hall_light.stat", ids, "hall_light.state"},
		{"Hall_Light.set", ids, "hall_light.set"},
		{"kitchen.light", []string{"kettle.set", "kitchen_lamp.set", "kitchen_light.set", "kitchen_light.state"}, "kitchen_light.set"},
		{"kitchen-light.state", []string{"kitchen_lamp.state", "kitchen_light.state"}, "kitchen_light.state"},
		{"porch_ligth.set", ids, "porch_light.set"},
		{"frontdoor.contact", ids, "front_door.contact"},
		{"living_plug.powr", ids, "living_plug.power"},
		{"restrat", []string{"parallel", "queued", "restart", "single"}, "restart"},
		{"sunest", []string{"sunrise", "sunset"}, "sunset"},
		{"brigthness", []string{"brightness", "transition", "state"}, "brightness"},
		{"hall_motion.ocupancy", []string{"hall_light.occupancy", "hall_motion.occupancy"}, "hall_motion.occupancy"},
	} {
		got := core.CloseMatches(tc.q, tc.candidates, 3)
		if len(got) == 0 || got[0] != tc.first {
			t.Errorf("closeMatches(%q) = %q, want %q first", tc.q, got, tc.first)
		}
	}
	if got := core.CloseMatches("zzzzzz", ids, 3); len(got) != 0 {
		t.Errorf("nothing is close to zzzzzz, got %q", got)
	}
}

// TestUnknownNameHintsRankBySimilarity: the unknown_name hint of a
// validation names the most similar id of the wanted kind first.
func TestUnknownNameHintsRankBySimilarity(t *testing.T) {
	cat := newMapCatalog("k-1",
		entry("kettle.set", pilotage.KindAction, pilotage.RiskControl, plugSet, ""),
		entry("kitchen_lamp.set", pilotage.KindAction, pilotage.RiskControl, lightSet, ""),
		entry("kitchen_light.set", pilotage.KindAction, pilotage.RiskControl, lightSet, ""),
		entry("kitchen_light.state", pilotage.KindState, pilotage.RiskRead, "", onOff),
		entry("hall_lig.set", pilotage.KindAction, pilotage.RiskControl, lightSet, ""),
		entry("hall_light.set", pilotage.KindAction, pilotage.RiskControl, lightSet, ""),
		entry("hall_light.state", pilotage.KindState, pilotage.RiskRead, "", onOff),
	)
	for _, tc := range []struct{ call, first string }{
		{"hall_ligth.set", "hall_light.set"},
		{"kitchen.light", "kitchen_light.set"},
		{"kitchen_light", "kitchen_light.set"},
		{"kitchen_ligth.set", "kitchen_light.set"},
	} {
		src := `{"name": "x", "triggers": [{"id": "t", "at": "07:00"}], "steps": [{"id": "s", "call": "` + tc.call + `", "args": {"state": "ON"}}]}`
		res, err := Validate([]byte(src), cat, ValidateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var hint string
		for _, d := range res.Diagnostics {
			if d.Code == string(core.CodeUnknownName) {
				hint = d.Hint
			}
		}
		if !strings.HasPrefix(hint, `did you mean "`+tc.first+`"`) {
			t.Errorf("call %q: hint %q, want %q first", tc.call, hint, tc.first)
		}
	}
}
