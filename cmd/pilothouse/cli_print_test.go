package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestPrintRulesSaysWhatCannotFire: `pilothouse rules` says, as the web
// page does, that a rule naming an entry the catalog lacks cannot fire.
func TestPrintRulesSaysWhatCannotFire(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule pilotage.RuleInfo
		want string // "" = no such line
	}{
		{"enabled", pilotage.RuleInfo{Name: "r", Status: "enabled", Missing: []string{"hall_light.set", "hall_motion.occupancy"}},
			"    cannot fire: not in the catalog: hall_light.set, hall_motion.occupancy\n"},
		{"disabled", pilotage.RuleInfo{Name: "r", Status: "disabled", Missing: []string{"hall_light.set"}},
			"    could not fire if enabled: not in the catalog: hall_light.set\n"},
		{"whole", pilotage.RuleInfo{Name: "r", Status: "enabled"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printRules(&b, []pilotage.RuleInfo{tc.rule}, time.UTC, nil)
			got := b.String()
			if tc.want == "" && strings.Contains(got, "fire") || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("printed %q, want %q", got, tc.want)
			}
		})
	}
}
