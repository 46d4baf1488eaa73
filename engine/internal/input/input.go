// Package input reads execute's input: the program's params object and
// its reserved members, scenario (test runs) and install (deploys).
package input

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Bind applies the input convention: input is the params object; for
// test runs the reserved member "scenario" describes the simulation, for
// deploys "install" the rule it installs (see installOf).
func Bind(c *rules.Compiled, raw json.RawMessage, testRun, deploy bool) (map[string]any, *rules.Scenario, Install, []pilotage.Diagnostic) {
	params := map[string]any{}
	if Present(raw) {
		var in any
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, nil, Install{}, []pilotage.Diagnostic{Diag("", "input is not valid JSON")}
		}
		obj, ok := in.(map[string]any)
		if !ok {
			return nil, nil, Install{}, []pilotage.Diagnostic{Diag("", "input must be an object: the program's params")}
		}
		params = obj
	}
	params, inst, diags := installOf(params, deploy)
	if len(diags) > 0 {
		return nil, nil, inst, diags
	}
	sc, params, diags := scenarioOf(c, params, testRun)
	return params, sc, inst, diags
}

// scenarioOf takes a test run's reserved member "scenario" out of params
// and checks both.
func scenarioOf(c *rules.Compiled, params map[string]any, testRun bool) (*rules.Scenario, map[string]any, []pilotage.Diagnostic) {
	var sc *rules.Scenario
	if s, ok := params[rules.ReservedInputMember]; ok {
		if !testRun {
			return nil, nil, []pilotage.Diagnostic{Diag("/"+rules.ReservedInputMember, "scenario is only accepted with test_run: true")}
		}
		rest := make(map[string]any, len(params))
		for k, v := range params {
			if k != rules.ReservedInputMember {
				rest[k] = v
			}
		}
		_, parsed, diags := rules.ParseScenario(map[string]any{"scenario": s})
		if len(diags) > 0 {
			return nil, nil, diags
		}
		if d := rules.CheckScenario(c, parsed); len(d) > 0 {
			return nil, nil, d
		}
		sc = &parsed
		params = rest
	}
	if d := rules.CheckParams(c, params, ""); len(d) > 0 {
		return nil, nil, d
	}
	return sc, params, nil
}

// Diag is an input_binding error at path.
func Diag(path, msg string) pilotage.Diagnostic {
	return pilotage.Diagnostic{Code: rules.CodeInputBinding, Severity: pilotage.SeverityError, Path: path, Message: msg}
}

// maxWords bounds the part of an instance name taken from its input.
const maxWords = 48

// Words names an input by its values: catalog ids by their device,
// other strings and numbers as written, in key order, as name characters.
func Words(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var words []string
	for _, k := range keys {
		var w string
		switch v := params[k].(type) {
		case string:
			w = access.DeviceOf(v)
		case float64, int, bool:
			b, _ := json.Marshal(v)
			w = string(b)
		}
		if w = nameChars(w); w != "" {
			words = append(words, w)
		}
	}
	out := strings.Join(words, "-")
	if len(out) > maxWords {
		out = strings.TrimRight(out[:maxWords], "-")
	}
	if out == "" {
		out = "copy"
	}
	return out
}

// nameChars keeps the characters a rule name may hold.
func nameChars(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r == '.' || r == ' ':
			return '-'
		}
		return -1
	}, s)
}

// Install is execute input's reserved member "install": the rule a
// deploy installs (default: the engine's instance name) and whether it may replace
// an installed rule of that name that runs another program or input.
type Install struct {
	Rule    string
	Replace bool
}

// installOf takes the reserved member "install" out of params and checks
// it; only a deploy takes it.
func installOf(params map[string]any, deploy bool) (map[string]any, Install, []pilotage.Diagnostic) {
	var o Install
	v, ok := params[rules.InstallInputMember]
	if !ok {
		return params, o, nil
	}
	at := "/" + rules.InstallInputMember
	bad := func(path, msg string) (map[string]any, Install, []pilotage.Diagnostic) {
		return nil, o, []pilotage.Diagnostic{Diag(path, msg)}
	}
	if !deploy {
		return bad(at, "install is only accepted by a deploy (execute without test_run)")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return bad(at, `install must be an object: {"rule": "<rule name>", "replace": true}`)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch x := obj[k]; k {
		case "rule":
			s, ok := x.(string)
			if !ok || !rules.ValidName(s) {
				return bad(at+"/rule", "install.rule must be a rule name: 1-64 of A-Z a-z 0-9 _ - ., starting with a letter or digit")
			}
			o.Rule = s
		case "replace":
			b, ok := x.(bool)
			if !ok {
				return bad(at+"/replace", "install.replace must be true or false")
			}
			o.Replace = b
		default:
			return bad(at, "install takes only rule and replace, not "+shown.Quote(k))
		}
	}
	rest := make(map[string]any, len(params)-1)
	for k, x := range params {
		if k != rules.InstallInputMember {
			rest[k] = x
		}
	}
	return rest, o, nil
}

// Present reports whether raw holds a JSON value other than null.
func Present(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}
