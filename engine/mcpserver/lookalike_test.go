package mcpserver_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// TestLookAlikeRuleNameRefused: a guest may not install a rule whose name
// a person cannot tell apart from the owner's (case, a digit or capital
// I for a letter); the refusal is the taken name's and names the owner's
// rule. A name a person can tell apart installs, and redeploying the
// owner's own rule under its own name is no look-alike.
func TestLookAlikeRuleNameRefused(t *testing.T) {
	s := newHTTPStack(t, scopedPrincipals(), storage.Options{})
	owner, guest := s.client("owner-token"), s.client("guest-token")
	rule := func(name, state string) map[string]any {
		return prog(t, `{"name":"`+name+`","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"s","call":"porch_light.set","args":{"state":"`+state+`"}}]}`)
	}
	deployed(t, owner, `{"name":"owner-lock","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"lock","call":"front_lock.set","args":{"state":"LOCK"}}]}`)
	for _, tc := range []struct {
		name  string
		input map[string]any // install.rule names the rule instead of the program
	}{
		{"Owner-Lock", nil},
		{"OWNER-LOCK", nil},
		{"0wner-lock", nil},
		{"owner-Iock", nil},
		{"porch", map[string]any{"install": map[string]any{"rule": "Owner-lock"}}},
	} {
		args := map[string]any{"program": rule(tc.name, "ON")}
		if tc.input != nil {
			args["input"] = tc.input
		}
		r := execute(t, guest, args)
		oc := r["outcome"].(map[string]any)
		msg, _ := oc["error"].(string)
		if oc["ok"] != false || oc["status"] != "denied" || !strings.Contains(msg, `"owner-lock"`) || !strings.Contains(msg, "looks the same") {
			t.Errorf("guest deploy of %q (input %v): %v, want denied naming \"owner-lock\"", tc.name, tc.input, oc)
		}
	}
	deployed(t, guest, `{"name":"owner-lamp","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"s","call":"porch_light.set","args":{"state":"ON"}}]}`)
	redeployed(t, owner, `{"name":"owner-lock","triggers":[{"id":"t","at":"23:30"}],"steps":[{"id":"lock","call":"front_lock.set","args":{"state":"LOCK"}}]}`)
	names := ruleNames(t, owner)
	slices.Sort(names)
	if !slices.Equal(names, []string{"owner-lamp", "owner-lock"}) {
		t.Errorf("installed rules %v, want [owner-lamp owner-lock]", names)
	}
}
