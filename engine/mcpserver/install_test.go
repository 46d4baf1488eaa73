package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// TestNoSilentReplacement (issue 30, item 5): a deploy over an installed
// rule of another program or input installs nothing unless its input asks
// to replace it, and says beforehand what replacing would undo; the
// caller names an instance with install.rule to keep both.
func TestNoSilentReplacement(t *testing.T) {
	_, c := ownerStack(t)
	late := func(at string) string {
		return `{"name": "porch-late", "triggers": [{"id": "late", "at": "` + at + `"}],
		  "steps": [{"id": "off", "call": "porch_light.set", "args": {"state": "OFF"}}]}`
	}
	first := deployed(t, c, late("23:00"))
	status := func(r map[string]any) string { return r["outcome"].(map[string]any)["status"].(string) }
	ruleRef := func(name string) string {
		out, isErr := callTool(t, c, "pilothouse_rules", map[string]any{"last_firings": 0})
		if isErr {
			t.Fatalf("rules: %v", out)
		}
		for _, r := range out["rules"].([]any) {
			if r := r.(map[string]any); r["name"] == name {
				return r["program_ref"].(string)
			}
		}
		return ""
	}

	// A changed body under the same name: refused, and it says what it
	// would replace.
	r := execute(t, c, map[string]any{"program": prog(t, late("23:30"))})
	rep, _ := r["replaces"].(map[string]any)
	if status(r) != "rule_exists" || rep["rule"] != "porch-late" || rep["program_ref"] != first || rep["runs_in_progress"] != 0.0 ||
		!strings.Contains(js(r["outcome"]), "install.replace") {
		t.Fatalf("changed body, replace not asked: %s", js(r))
	}
	if got := ruleRef("porch-late"); got != first {
		t.Fatalf("the refused deploy changed the rule: %s, want %s", got, first)
	}

	// The caller names a second instance: both rules stay.
	r = execute(t, c, map[string]any{"program": prog(t, late("23:30")), "input": map[string]any{"install": map[string]any{"rule": "porch-later"}}})
	if out, _ := r["output"].(map[string]any); status(r) != "success" || out["rule"] != "porch-later" || out["replaced"] != false {
		t.Fatalf("named instance: %s", js(r))
	}
	if names := ruleNames(t, c); !contains(names, "porch-late") || !contains(names, "porch-later") || ruleRef("porch-late") != first {
		t.Fatalf("rules after the named instance: %v", names)
	}

	// Asked to replace: it does, and says so.
	r = execute(t, c, map[string]any{"program": prog(t, late("22:30")), "input": map[string]any{"install": map[string]any{"replace": true}}})
	if out, _ := r["output"].(map[string]any); status(r) != "success" || out["rule"] != "porch-late" || out["replaced"] != true || ruleRef("porch-late") == first {
		t.Fatalf("replace asked: %s", js(r))
	}

	// A reusable program by program_ref, with the instance name given.
	r = execute(t, c, map[string]any{"program": prog(t, motionLight), "input": map[string]any{"light": "hall_light.set", "sensor": "hall_motion.occupancy"}})
	ref, _ := r["output"].(map[string]any)["program_ref"].(string)
	r = execute(t, c, map[string]any{"program_ref": ref, "input": map[string]any{"light": "porch_light.set", "sensor": "hall_motion.occupancy",
		"install": map[string]any{"rule": "porch-motion"}}})
	if out, _ := r["output"].(map[string]any); status(r) != "success" || out["rule"] != "porch-motion" || ruleRef("porch-motion") != ref {
		t.Fatalf("program_ref with install.rule: %s", js(r))
	}
}

// TestInstallMemberIsChecked: the reserved input member install is
// checked like any input, only a deploy takes it, and no param may be
// called so.
func TestInstallMemberIsChecked(t *testing.T) {
	c := newHTTPStack(t, nil, storage.Options{}).client("")
	src := `{"name": "porch-on", "triggers": [{"id": "late", "at": "23:00"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`
	for _, tc := range []struct {
		name, path string
		args       map[string]any
	}{
		{"not an object", "/install", map[string]any{"input": map[string]any{"install": "porch"}}},
		{"bad rule name", "/install/rule", map[string]any{"input": map[string]any{"install": map[string]any{"rule": "porch light!"}}}},
		{"replace not a boolean", "/install/replace", map[string]any{"input": map[string]any{"install": map[string]any{"replace": "yes"}}}},
		{"unknown member", "/install", map[string]any{"input": map[string]any{"install": map[string]any{"force": true}}}},
		{"with test_run", "/install", map[string]any{"test_run": true, "input": map[string]any{"install": map[string]any{"rule": "x"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["program"] = prog(t, src)
			r := execute(t, c, tc.args)
			d := js(r["diagnostics"])
			if r["outcome"].(map[string]any)["status"] != "validation_error" || !strings.Contains(d, `"code":"input_binding"`) || !strings.Contains(d, `"path":"`+tc.path+`"`) {
				t.Fatalf("%s", js(r))
			}
		})
	}
	if names := ruleNames(t, c); len(names) != 0 {
		t.Errorf("refused deploys installed %v", names)
	}
	v := validate(t, c, `{"name": "p", "params": {"type": "object", "properties": {"install": {"type": "string"}}},
	  "triggers": [{"id": "late", "at": "23:00"}], "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`)
	if v["valid"] != false || !strings.Contains(js(v["diagnostics"]), `"code":"bad_params"`) {
		t.Errorf("a param called install: %s", js(v))
	}
}
