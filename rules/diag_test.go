package rules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// prog builds a small program around the given steps JSON (and optional
// extra top-level members).
func prog(steps string, extra ...string) string {
	s := `{"name":"t","triggers":[{"id":"go","state":"hall_motion.occupancy","to":true}],"steps":` + steps
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

type codeCase struct {
	name string
	code string
	path string // expected path of the finding
	src  string
	opts ValidateOptions
}

// codeCases has at least one case per code of Codes (TestEveryCodeTested).
var codeCases = []codeCase{
	{"constraint/sun_value", core.CodeConstraint, "/triggers/0/sun",
		`{"name":"t","triggers":[{"id":"s","sun":"noon"}],"steps":[{"id":"x","stop":"done"}]}`, ValidateOptions{HasLocation: true}},
	{"constraint/continue_without_timeout", core.CodeConstraint, "/steps/0/continue_on_timeout",
		prog(`[{"id":"w","wait":{"expr":"true"},"continue_on_timeout":true}]`), ValidateOptions{}},
	{"context_binding/supplied", CodeContextBinding, "", prog(`[{"id":"x","stop":"done"}]`), ValidateOptions{Context: json.RawMessage(`{}`)}},
	{"syntax/trailing_comma", core.CodeSyntax, "", `{"name":"t",}`, ValidateOptions{}},
	{"type_mismatch/name_number", core.CodeTypeMismatch, "/name", `{"name":1,"triggers":[{"id":"c","cron":"@hourly"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"type_mismatch/program_array", core.CodeTypeMismatch, "", `[]`, ValidateOptions{}},
	{"unknown_field/stpes", core.CodeUnknownField, "/stpes", prog(`[{"id":"x","stop":"done"}]`, `"stpes":[]`), ValidateOptions{}},
	{"missing_field/name", core.CodeMissingField, "", `{"triggers":[{"id":"c","cron":"@hourly"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"missing_field/step_kind", core.CodeMissingField, "/steps/0", prog(`[{"id":"x"}]`), ValidateOptions{}},
	{"duplicate_key/name", core.CodeDuplicateKey, "/name", `{"name":"a","name":"b","triggers":[{"id":"c","cron":"@hourly"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"conflicting_fields/call_and_delay", core.CodeConflictFields, "/steps/0/delay", prog(`[{"id":"x","call":"hall_light.set","delay":"1s"}]`), ValidateOptions{}},
	{"invalid_id/empty", core.CodeInvalidID, "/steps/0/id", prog(`[{"id":"","stop":""}]`), ValidateOptions{}},
	{"invalid_id/name", core.CodeInvalidID, "/name", `{"name":"my rule!","triggers":[{"id":"c","cron":"@hourly"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"reserved_character/hash", core.CodeReservedChar, "/steps/0/id", prog(`[{"id":"a#1","stop":""}]`), ValidateOptions{}},
	{"reserved_character/slash", core.CodeReservedChar, "/triggers/0/id", `{"name":"t","triggers":[{"id":"a/b","cron":"@hourly"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"reserved_id/triggers", core.CodeReservedID, "/steps/0/id", prog(`[{"id":"triggers","stop":""}]`), ValidateOptions{}},
	{"duplicate_id/step_and_trigger", core.CodeDuplicateID, "/steps/0/id", prog(`[{"id":"go","stop":""}]`), ValidateOptions{}},
	{"duplicate_label/arms", core.CodeDuplicateLabel, "/steps/0/choose/1", prog(`[{"id":"c","choose":[{"label":"a","when":"true","do":[]},{"label":"a","when":"false","do":[]}]}]`), ValidateOptions{}},
	{"unknown_name/call", core.CodeUnknownName, "/steps/0/call", prog(`[{"id":"x","call":"hall_lihgt.set","args":{"state":"ON"}}]`), ValidateOptions{}},
	{"unknown_name/expr", core.CodeUnknownName, "/steps/0/if", prog(`[{"id":"x","if":"state('hall_motion.occupance') == true","then":[]}]`), ValidateOptions{}},
	{"wrong_kind/trigger_on_action", core.CodeWrongKind, "/triggers/0/state", `{"name":"t","triggers":[{"id":"a","state":"hall_light.set","to":"ON"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"not_callable/state", core.CodeNotCallable, "/steps/0/call", prog(`[{"id":"x","call":"hall_light.state"}]`), ValidateOptions{}},
	{"bad_arguments/enum", core.CodeBadArguments, "/steps/0/args/state", prog(`[{"id":"x","call":"hall_light.set","args":{"state":"on"}}]`), ValidateOptions{}},
	{"bad_arguments/missing", core.CodeBadArguments, "/steps/0/args", prog(`[{"id":"x","call":"notify.phone","args":{"title":"hi"}}]`), ValidateOptions{}},
	{"bad_arguments/unknown_templated", core.CodeBadArguments, "/steps/0/args/level", prog(`[{"id":"x","call":"hall_light.set","args":{"level":"{{ 3 }}"}}]`), ValidateOptions{}},
	{"bad_expression/syntax", core.CodeBadExpression, "/steps/0/if", prog(`[{"id":"x","if":"hour(now()) >=","then":[]}]`), ValidateOptions{}},
	{"bad_expression/unknown_var", core.CodeBadExpression, "/steps/0/args/message", prog(`[{"id":"x","call":"notify.phone","args":{"message":"hi {{ foo.bar }}"}}]`), ValidateOptions{}},
	{"non_constant_reference/var", core.CodeNonConstantRef, "/steps/1/if", prog(`[{"id":"s","set":{"e":"hall_light.state"}},{"id":"x","if":"state(vars.e) == 'ON'","then":[]}]`), ValidateOptions{}},
	{"bad_cron/fields", core.CodeBadCron, "/triggers/0/cron", `{"name":"t","triggers":[{"id":"c","cron":"61 * * * *"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"bad_duration/delay", core.CodeBadDuration, "/steps/0/delay", prog(`[{"id":"x","delay":"5 minutes"}]`), ValidateOptions{}},
	{"bad_duration/templated_for", core.CodeBadDuration, "/triggers/0/for", `{"name":"t","triggers":[{"id":"a","state":"hall_motion.occupancy","to":false,"for":"{{ params.hold }}m"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"bad_time/at", core.CodeBadTime, "/triggers/0/at", `{"name":"t","triggers":[{"id":"a","at":"7:30pm"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"missing_location/sun", core.CodeMissingLocation, "/triggers/0/sun", `{"name":"t","triggers":[{"id":"s","sun":"sunset"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"unreachable_value/enum", core.CodeUnreachableValue, "/triggers/0/to", `{"name":"t","triggers":[{"id":"a","state":"hall_light.state","to":"on"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"unreachable_value/event", core.CodeUnreachableValue, "/triggers/0/value", `{"name":"t","triggers":[{"id":"a","event":"bedroom_remote.action","value":"double"}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"bad_mode/unknown", core.CodeBadMode, "/mode", prog(`[{"id":"x","stop":""}]`, `"mode":"once"`), ValidateOptions{}},
	{"bad_mode/max_single", core.CodeBadMode, "/max", prog(`[{"id":"x","stop":""}]`, `"max":3`), ValidateOptions{}},
	{"bad_mode/max_bound", core.CodeBadMode, "/max", prog(`[{"id":"x","stop":""}]`, `"mode":"parallel","max":1001`), ValidateOptions{}},
	{"bad_params/not_object", core.CodeBadParams, "/params/type", prog(`[{"id":"x","stop":""}]`, `"params":{"type":"string"}`), ValidateOptions{}},
	{"bad_params/bad_schema", core.CodeBadParams, "/params", prog(`[{"id":"x","stop":""}]`, `"params":{"type":"object","properties":{"a":{"type":"strnig"}}}`), ValidateOptions{}},
	{"bad_params/reserved_scenario", core.CodeBadParams, "/params/properties/scenario", prog(`[{"id":"x","stop":""}]`, `"params":{"type":"object","properties":{"scenario":{"type":"string"}}}`), ValidateOptions{}},
	{"bad_params/undeclared", core.CodeBadParams, "/steps/0/delay", prog(`[{"id":"x","delay":"{{ params.hodl }}"}]`, `"params":{"type":"object","properties":{"hold":{"type":"string"}}}`), ValidateOptions{}},
	{"bad_params/no_params", core.CodeBadParams, "/steps/0/delay", prog(`[{"id":"x","delay":"{{ params.hold }}"}]`), ValidateOptions{}},
	{"unbounded_loop/while_no_max", core.CodeUnboundedLoop, "/steps/0/repeat", prog(`[{"id":"r","repeat":{"while":"true"},"do":[]}]`), ValidateOptions{}},
	{"unbounded_loop/count", core.CodeUnboundedLoop, "/steps/0/repeat/count", prog(`[{"id":"r","repeat":{"count":100000},"do":[]}]`), ValidateOptions{}},
	{"scope/var_after_branch", core.CodeScope, "/steps/1/args/message", prog(`[{"id":"b","if":"true","then":[{"id":"s","set":{"x":1}}]},{"id":"n","call":"notify.phone","args":{"message":"{{ vars.x }}"}}]`), ValidateOptions{}},
	{"scope/step_output_after_loop", core.CodeScope, "/steps/1/if", prog(`[{"id":"r","repeat":{"count":2},"do":[{"id":"in","call":"hall_light.set","args":{"state":"TOGGLE"}}]},{"id":"x","if":"steps.in.output != nil","then":[]}]`), ValidateOptions{}},
	{"scope/index_outside_loop", core.CodeScope, "/steps/0/if", prog(`[{"id":"x","if":"vars.index > 1","then":[]}]`), ValidateOptions{}},
	{"unknown_step/later", core.CodeUnknownStep, "/steps/0/if", prog(`[{"id":"x","if":"steps.y.output == nil","then":[]},{"id":"y","stop":""}]`), ValidateOptions{}},
	{"templated_id/call_param_not_a_reference", core.CodeTemplatedID, "/steps/0/call", prog(`[{"id":"x","call":"{{ params.light }}","args":{"state":"ON"}}]`, `"params":{"type":"object","properties":{"light":{"type":"string"}}}`), ValidateOptions{}},
	{"templated_id/trigger_undeclared", core.CodeTemplatedID, "/triggers/0/state", `{"name":"t","triggers":[{"id":"a","state":"{{ params.sensor }}","to":true}],"steps":[{"id":"x","stop":""}]}`, ValidateOptions{}},
	{"templated_id/built_id", core.CodeTemplatedID, "/steps/0/call", prog(`[{"id":"x","call":"{{ params.room }}_light.set","args":{"state":"ON"}}]`, `"params":{"type":"object","properties":{"room":{"type":"string"}}}`), ValidateOptions{}},
	{"no_match/empty_area", core.CodeNoMatch, "/steps/0/call", prog(`[{"id":"x","call":{"area":"attic","action":"set"},"args":{"state":"OFF"}}]`), ValidateOptions{}},
	{"overlapping_rule/same_trigger", core.CodeOverlappingRule, "/steps/0/call", prog(`[{"id":"x","call":"hall_light.set","args":{"state":"ON"}}]`),
		ValidateOptions{Installed: installedRule(`{"name":"other","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"steps":[{"id":"on","call":"hall_light.set","args":{"brightness":90}}]}`)}},
	{"call_depth/chain", CodeCallDepth, "/steps/0/call", prog(`[{"id":"x","call":"script.flash_porch","args":{"times":2}}]`),
		ValidateOptions{Automation: func(string) (*Compiled, bool) { return &Compiled{CallDepth: 4}, true }}},
}

// inputCases exercise the input_binding code through CheckParams.
func TestCheckParams(t *testing.T) {
	res, err := Validate([]byte(prog(`[{"id":"x","stop":""}]`, `"params":{"type":"object","required":["hold"],"properties":{"hold":{"type":"string"},"n":{"type":"integer"}}}`)), demoCatalog(), ValidateOptions{})
	if err != nil || !res.Valid {
		t.Fatalf("program: %v %+v", err, res)
	}
	p := res.Compiled
	for _, tc := range []struct {
		name   string
		params any
		at     string
		want   []string // paths
	}{
		{"ok", map[string]any{"hold": "2m"}, "", nil},
		{"missing", map[string]any{}, "/params", []string{"/params/hold"}},
		{"wrong_type", map[string]any{"hold": "2m", "n": "three"}, "", []string{"/n"}},
		{"misspelt", map[string]any{"hold": "2m", "nn": 3}, "", []string{"/nn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := CheckParams(p, tc.params, tc.at)
			var got []string
			for _, d := range ds {
				if d.Code != CodeInputBinding {
					t.Errorf("code %q", d.Code)
				}
				got = append(got, d.Path)
				if d.Path == "/nn" && d.Hint != `did you mean "n"?` {
					t.Errorf("hint %q", d.Hint)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("paths %v, want %v (%+v)", got, tc.want, ds)
			}
		})
	}
}

func TestDiagnosticCodes(t *testing.T) {
	cat := demoCatalog()
	for _, tc := range codeCases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Validate([]byte(tc.src), cat, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkClosed(t, res.Diagnostics)
			for _, d := range res.Diagnostics {
				if d.Code == tc.code && d.Path == tc.path {
					if d.Severity == pilotage.SeverityError && res.Valid {
						t.Errorf("valid with an error")
					}
					return
				}
			}
			t.Errorf("no %s at %q; got %s", tc.code, tc.path, diagString(res.Diagnostics))
		})
	}
}

func TestEveryCodeTested(t *testing.T) {
	tested := map[string]bool{
		CodeInputBinding: true, // TestCheckParams
		CodeReplacedRule: true, // deploy only: engine/mcpserver TestRedeployUnderSameNameWarns
	}
	for _, tc := range codeCases {
		tested[tc.code] = true
	}
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c.Code] {
			t.Errorf("code %q twice in Codes", c.Code)
		}
		seen[c.Code] = true
		if !tested[c.Code] {
			t.Errorf("code %q has no test case", c.Code)
		}
	}
	for _, r := range []string{core.CodeConstraint, CodeInputBinding, CodeContextBinding} {
		if !seen[r] {
			t.Errorf("reserved code %q missing from Codes", r)
		}
	}
}

// checkClosed asserts every diagnostic uses a code of the closed table with
// its fixed severity and a well-formed path.
func checkClosed(t testing.TB, ds []pilotage.Diagnostic) {
	t.Helper()
	for _, d := range ds {
		found := false
		for _, c := range Codes {
			if c.Code == d.Code {
				found = true
				if c.Severity != d.Severity {
					t.Errorf("%s: severity %s, table says %s", d.Code, d.Severity, c.Severity)
				}
			}
		}
		if !found {
			t.Errorf("code %q is not in Codes", d.Code)
		}
		if d.Path != "" && !strings.HasPrefix(d.Path, "/") {
			t.Errorf("%s: path %q is not a JSON Pointer", d.Code, d.Path)
		}
		if d.Message == "" {
			t.Errorf("%s: empty message", d.Code)
		}
	}
}

func diagString(ds []pilotage.Diagnostic) string {
	b, _ := json.Marshal(ds)
	return string(b)
}

func TestExpressionMustBeBool(t *testing.T) {
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{"hour(now())", false}, {"'yes'", false}, {"hour(now()) > 3", true}, {"state('hall_motion.occupancy')", true}, {"trigger.value", true},
	} {
		res, err := Validate([]byte(prog(`[{"id":"x","if":"`+tc.expr+`","then":[]}]`)), demoCatalog(), ValidateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Valid != tc.ok {
			t.Errorf("%s: valid=%v, want %v: %s", tc.expr, res.Valid, tc.ok, diagString(res.Diagnostics))
		}
	}
}
