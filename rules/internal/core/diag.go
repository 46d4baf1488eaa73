package core

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// CodeInfo is one row of the closed diagnostic-code table.
type CodeInfo struct {
	Code     string
	Severity pilotage.Severity
	Meaning  string
}

// Diagnostic codes of automation/1. Codes is the one closed table: the
// validator emits only these, and the closed-sets guide is generated from it.
const (
	CodeConstraint       = "constraint"
	CodeInputBinding     = "input_binding"
	CodeContextBinding   = "context_binding"
	CodeSyntax           = "syntax"
	CodeTypeMismatch     = "type_mismatch"
	CodeUnknownField     = "unknown_field"
	CodeMissingField     = "missing_field"
	CodeDuplicateKey     = "duplicate_key"
	CodeConflictFields   = "conflicting_fields"
	CodeInvalidID        = "invalid_id"
	CodeReservedChar     = "reserved_character"
	CodeReservedID       = "reserved_id"
	CodeDuplicateID      = "duplicate_id"
	CodeDuplicateLabel   = "duplicate_label"
	CodeUnknownName      = "unknown_name"
	CodeWrongKind        = "wrong_kind"
	CodeNotCallable      = "not_callable"
	CodeBadArguments     = "bad_arguments"
	CodeBadExpression    = "bad_expression"
	CodeNonConstantRef   = "non_constant_reference"
	CodeBadCron          = "bad_cron"
	CodeBadDuration      = "bad_duration"
	CodeBadTime          = "bad_time"
	CodeMissingLocation  = "missing_location"
	CodeUnreachableValue = "unreachable_value"
	CodeBadMode          = "bad_mode"
	CodeBadParams        = "bad_params"
	CodeUnboundedLoop    = "unbounded_loop"
	CodeScope            = "scope"
	CodeUnknownStep      = "unknown_step"
	CodeCallDepth        = "call_depth"
	CodeTemplatedID      = "templated_id"
	CodeOverlappingRule  = "overlapping_rule"
	CodeReplacedRule     = "replaced_rule"
	CodeNoMatch          = "no_match"
)

// Codes is the closed set of diagnostic codes, each with its fixed severity.
var Codes = []CodeInfo{
	{CodeConstraint, pilotage.SeverityError, "reserved: a rule of the Language was broken that no more specific code names (a value out of range or outside its allowed set)"},
	{CodeInputBinding, pilotage.SeverityError, "reserved: execute input does not fit the program (params against the params schema, or the test-run scenario); path points into input"},
	{CodeContextBinding, pilotage.SeverityError, "reserved: context was supplied, but automation/1 declares no context_schema; path is \"\""},
	{CodeSyntax, pilotage.SeverityError, "the program is not well-formed JSON; the message and range give line and column in the document"},
	{CodeTypeMismatch, pilotage.SeverityError, "a value has the wrong JSON type (e.g. a number where a string is required)"},
	{CodeUnknownField, pilotage.SeverityError, "an object has a member the Language does not define here; the hint names the closest field"},
	{CodeMissingField, pilotage.SeverityError, "a required member is absent (or a required array is empty)"},
	{CodeDuplicateKey, pilotage.SeverityError, "an object has the same member name twice"},
	{CodeConflictFields, pilotage.SeverityError, "members that exclude each other are both present (e.g. a step with both call and delay)"},
	{CodeInvalidID, pilotage.SeverityError, "an id, name or variable name is empty, too long or not of the allowed form"},
	{CodeReservedChar, pilotage.SeverityError, "an id contains '#' or '/', which are reserved for trace identity (spec §3.4)"},
	{CodeReservedID, pilotage.SeverityError, "an id is reserved: 'triggers' names the trigger branch of every plan and trace"},
	{CodeDuplicateID, pilotage.SeverityError, "two triggers, conditions or steps share an id; ids are unique across the whole program"},
	{CodeDuplicateLabel, pilotage.SeverityError, "two arms of one choose step share a label"},
	{CodeUnknownName, pilotage.SeverityError, "a catalog id is not in the catalog (visible to you); the hint lists close matches"},
	{CodeWrongKind, pilotage.SeverityError, "a catalog id names an entry of the wrong kind (e.g. a state trigger on an action)"},
	{CodeNotCallable, pilotage.SeverityError, "call names an entry that is not callable (only action and automation entries are)"},
	{CodeBadArguments, pilotage.SeverityError, "call args do not satisfy the entry's input_schema; path points at the argument"},
	{CodeBadExpression, pilotage.SeverityError, "an expression does not compile in the closed environment; range points inside the string"},
	{CodeNonConstantRef, pilotage.SeverityError, "state(...), since(...) or last_changed(...) was given something other than a string constant or params.<name> of a catalog param of kind state or event, states(...), since(...) or available(...) a selector object that is not an object of string constants, such a reader was used other than as a direct call (an alias, a value passed on), or $env was used: the references would not be known statically"},
	{CodeBadCron, pilotage.SeverityError, "a cron spec does not parse (5 fields, or 6 with seconds first, or a descriptor like @hourly)"},
	{CodeBadDuration, pilotage.SeverityError, "a duration does not parse (\"500ms\", \"90s\", \"2m\", \"1h30m\", \"PT2M\"), is negative, or is templated where a constant is required"},
	{CodeBadTime, pilotage.SeverityError, "a time of day is not HH:MM or HH:MM:SS (24-hour clock)"},
	{CodeMissingLocation, pilotage.SeverityError, "a sun trigger or sun condition needs the server's location (latitude/longitude), which is not configured; pilotage_discover says whether it is (environment.sun)"},
	{CodeUnreachableValue, pilotage.SeverityError, "a to/from/value filter (or one value of an event's value list) is a value the entry's output_schema never produces, or above/below watch a state that is not a number, or above is not below below: the trigger can never fire on it (the wait never ends)"},
	{CodeBadMode, pilotage.SeverityError, "mode is not single, restart, queued or parallel, or max is used wrongly"},
	{CodeBadParams, pilotage.SeverityError, "params is not a valid JSON Schema of an object, or an expression names a param it does not declare"},
	{CodeUnboundedLoop, pilotage.SeverityError, "a while/until loop has no max, or a loop bound exceeds the engine's iteration limit"},
	{CodeScope, pilotage.SeverityError, "a vars.* value or steps.<id>.output is named where it is not addressable (see the scope rules)"},
	{CodeUnknownStep, pilotage.SeverityError, "steps.<id> names no step, or a step that has not run yet at this point"},
	{CodeCallDepth, pilotage.SeverityError, "a call starts a chain of promoted automations calling each other deeper than the engine's call-depth limit (MaxCallDepth): every run would end limit_exceeded"},
	{CodeTemplatedID, pilotage.SeverityError, "a template stands where a catalog id goes (call, a trigger's or wait's state or event, an id passed to an automation's catalog param): only exactly \"{{ params.<name> }}\" naming a param declared with \"catalog\" may; the hint shows the declaration"},
	{CodeReplacedRule, pilotage.SeverityWarning, "validate: a rule of this program's name is installed (another program): a deploy replaces it only with input.install.replace: true (else it answers rule_exists), cancelling the runs in progress it names. Deploy (asked to replace): the rule it replaced ran with another input, or had runs in progress, which were cancelled (their remaining steps, such as turning a light back off, will not run)"},
	{CodeNoMatch, pilotage.SeverityWarning, "a selector (a call or state trigger by area, type or tag) addresses no entry in your catalog now: the call does nothing and the trigger never fires until a matching device appears (it is resolved again at every run)"},
	{CodeOverlappingRule, pilotage.SeverityWarning, "another installed rule (visible to you) writes the same device from the same trigger (a call or trigger by selector counts as what it addresses now; calls that leave the house, such as notifications, race nothing): the two race and the last command wins; merge them, make their conditions exclusive, or deploy under that rule's name to replace it"},
}

// CodeSeverity returns the fixed severity of a code (error when unknown).
func CodeSeverity(code string) pilotage.Severity {
	for _, c := range Codes {
		if c.Code == code {
			return c.Severity
		}
	}
	return pilotage.SeverityError
}

// Diags accumulates findings.
type Diags struct {
	List []pilotage.Diagnostic
}

// Add appends a finding with the severity its code has and returns it.
func (d *Diags) Add(code, path, hint, format string, args ...any) *pilotage.Diagnostic {
	d.List = append(d.List, pilotage.Diagnostic{
		Code:     code,
		Severity: CodeSeverity(code),
		Message:  fmt.Sprintf(format, args...),
		Path:     path,
		Hint:     hint,
	})
	return &d.List[len(d.List)-1]
}

// AddRange adds a finding located inside the string value at path, between
// rune offsets from and to of that string.
func (d *Diags) AddRange(code, path, s string, from, to int, hint, format string, args ...any) {
	g := d.Add(code, path, hint, format, args...)
	g.Range = StringRange(s, from, to)
}

// StringRange converts rune offsets inside s to a 1-based line/column range;
// the end position is exclusive (the column just after the last rune).
func StringRange(s string, from, to int) *pilotage.Range {
	n := 0
	for range s {
		n++
	}
	from = min(max(from, 0), n)
	to = min(max(to, from), n)
	if to == from && to < n {
		to++
	}
	pos := func(off int) pilotage.Position {
		line, col, i := 1, 1, 0
		for _, r := range s {
			if i == off {
				break
			}
			if r == '\n' {
				line++
				col = 1
			} else {
				col++
			}
			i++
		}
		return pilotage.Position{Line: line, Column: col}
	}
	return &pilotage.Range{Start: pos(from), End: pos(to)}
}

// HasErrors reports whether any finding is an error.
func HasErrors(ds []pilotage.Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == pilotage.SeverityError {
			return true
		}
	}
	return false
}

// ComparePtr orders JSON Pointers in document order for arrays (numeric
// tokens compare as numbers); "" comes first.
func ComparePtr(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(as[i], bs[i])
	}
	return len(as) - len(bs)
}

// HintFor suggests the close matches ("did you mean …?"), or "" when there are none.
func HintFor(matches []string) string {
	if len(matches) == 0 {
		return ""
	}
	return "did you mean " + strings.Join(QuoteAll(matches), " or ") + "?"
}

// QuoteAll quotes each string as Go would.
func QuoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
