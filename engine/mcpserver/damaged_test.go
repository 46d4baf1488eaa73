package mcpserver_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// TestDamagedRuleRowListsTheOthers: a rule row whose stored JSON columns
// were damaged on disk does not break pilothouse_rules: the other rules
// are listed as before, and the damaged one as broken with the reason.
func TestDamagedRuleRowListsTheOthers(t *testing.T) {
	for _, tc := range []struct{ col, value string }{
		{"params", `{"light": "porch`},
		{"params", `[1, 2]`},
		{"binding", `not json`},
	} {
		t.Run(tc.col+" "+tc.value, func(t *testing.T) {
			s, c := ownerStack(t)
			deployed(t, c, `{"name":"porch-on","triggers":[{"id":"t","at":"20:00"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
			deployed(t, c, `{"name":"hall-on","triggers":[{"id":"t","at":"21:00"}],"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
			db, err := sql.Open("sqlite", filepath.Join(s.dir, storage.FileName))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(context.Background(), `UPDATE rules SET `+tc.col+` = ? WHERE name = 'porch-on'`, tc.value); err != nil {
				t.Fatal(err)
			}
			out, isErr := callTool(t, c, "pilothouse_rules", map[string]any{"last_firings": 1})
			if isErr {
				t.Fatalf("pilothouse_rules: %v", out)
			}
			got := map[string]map[string]any{}
			for _, r := range out["rules"].([]any) {
				got[r.(map[string]any)["name"].(string)] = r.(map[string]any)
			}
			if hall := got["hall-on"]; hall == nil || hall["status"] != "enabled" {
				t.Errorf("the sound rule: %v", hall)
			}
			porch := got["porch-on"]
			if porch == nil || porch["status"] != "broken" || !strings.Contains(porch["broken"].(string), "its stored "+tc.col+" column is not a valid JSON object") {
				t.Errorf("the damaged rule: %v", porch)
			}
		})
	}
}
