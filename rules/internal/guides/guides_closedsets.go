package guides

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/plan"
)

// closedSetsBody generates the closed-sets guide from the tables the
// validator, planner and interpreter use, so the two cannot disagree.
func closedSetsBody() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# automation/1 — closed sets\n\n")
	w("Every closed set of the Language, generated from the tables the server itself uses. ")
	w("Values outside these sets never appear on the wire.\n\n")
	codesTable(w)
	catalogTables(w)
	deviceTypesTable(&b)
	statusTable(&b, "Run statuses", "Run-level `outcome.status` of execute and trace.", core.RunStatuses)
	statusTable(&b, "Step statuses", "`outcome.status` of each trace entry.", core.StepStatuses)
	kindTables(w)
	selectorTable(w)
	modesTable(w)
	envTables(w)
	limitsTable(w)
	b.WriteString(closedSetsProse)
	return b.String()
}

// writeFunc writes formatted guide text.
type writeFunc func(format string, args ...any)

func codesTable(w writeFunc) {
	w("## Diagnostic codes\n\n")
	w("Each code has a fixed severity. A program is valid iff no diagnostic has severity `error`; warnings never block. ")
	w("`path` is a JSON Pointer into the program (`\"\"` = the whole document; for `input_binding` into execute's `input`, for `context_binding` into `context`). ")
	w("`range`, when present, is a 1-based `{start:{line,column}, end:{line,column}}` inside the string value at `path` (end exclusive). ")
	w("`constraint`, `input_binding` and `context_binding` are the spec's reserved codes.\n\n")
	w("| code | severity | meaning |\n|---|---|---|\n")
	for _, c := range core.Codes {
		w("| `%s` | %s | %s |\n", c.Code, c.Severity, cell(c.Meaning))
	}
}

// catalogTables writes the catalog entry kinds and the risk levels.
func catalogTables(w writeFunc) {
	w("\n## Catalog entry kinds\n\n| kind | callable | what |\n|---|---|---|\n")
	for _, k := range pilotage.Kinds {
		w("| `%s` | %s | %s |\n", k.Kind, YesNo(k.Callable), cell(k.What))
	}
	w("\nOnly callable kinds may appear in a `call` step. Live values (current state) are served beside entries, never in them.\n")

	w("\n## Risk levels\n\n| risk | readOnly | destructive | openWorld | typical |\n|---|---|---|---|---|\n")
	for _, r := range pilotage.RiskLevels {
		w("| `%s` | %t | %t | %t | %s |\n", r.Risk, r.Hints.ReadOnly, r.Hints.Destructive, r.Hints.OpenWorld, cell(r.Typical))
	}
	w("\nA plan's `max_risk_hints` is computed from the steps' hints: readOnly = AND, destructive = OR, openWorld = OR; ")
	w("`max_risk` is the level consistent with them (destructive → `security`, else openWorld → `external`, else not readOnly → `control`, else `read`). ")
	w("Triggers, conditions, delays, waits, sets, stops, branches and loops are `read`; a call carries its entry's risk ")
	w("(a promoted automation its declared risk).\n")
}

// kindTables writes the trigger and step kinds (TriggerKinds, StepKinds).
func kindTables(w writeFunc) {
	w("\n## Trigger kinds\n\n| kind | members | plan step kind |\n|---|---|---|\n")
	for _, k := range model.TriggerKinds {
		w("| `%s` | %s | `%s` |\n", k.Kind, CodeList(k.Members), plan.PlanKindTrigger+":"+string(k.Kind))
	}
	w("\nA trigger with `state` is `numeric` when it has `above` or `below`, else `state`. ")
	w("An event trigger's `value` may be a list: any of its values matches.\n")

	w("\n## Condition kinds\n\n| kind | members | object members | plan step kind |\n|---|---|---|---|\n")
	for _, k := range model.ConditionKinds {
		obj := "—"
		if len(k.Window) > 0 {
			obj = CodeList(k.Window)
		}
		w("| `%s` | %s | %s | `%s` |\n", k.Kind, CodeList(k.Members), obj, plan.PlanKindCondition)
	}
	w("\nA window is from `after` (inclusive) until `before` (exclusive); when `after` is later in the day than `before` it crosses midnight. ")
	w("`weekday` is a name or list of `mon` … `sun`, the day of the moment checked. Offsets are signed durations. ")
	w("Sun conditions need the server's location (`missing_location` otherwise; `pilotage_discover` says whether it has one, `environment.sun`).\n")
	w("\nA program's `throttle` (a constant duration) lets its body start at most once per that long: a firing that passes its conditions sooner ends `throttled`.\n")

	w("\n## Step kinds\n\n| kind | members |\n|---|---|\n")
	for _, k := range model.StepKinds {
		w("| `%s` | %s |\n", k.Kind, CodeList(k.Members))
	}
	w("\nWait objects: `{state, to?, from?, for?}`, `{state, above?, below?, for?}`, `{event, value?}` or `{expr, for?}`. ")
	w("Repeat objects: exactly one of `count`, `for_each`, `while`, `until`, plus `max` (required for while/until). ")
	w("Choose arms: `{label?, when, do}`.\n")
}

func modesTable(w writeFunc) {
	w("\n## Modes\n\n| mode | a firing while the rule is still running |\n|---|---|\n")
	w("| `single` | is skipped (status `skipped`); the default |\n")
	w("| `restart` | cancels the running run (status `cancelled`) and starts anew |\n")
	w("| `queued` | waits its turn; at most `max` waiting (more are `skipped`) |\n")
	w("| `parallel` | runs alongside; at most `max` at once (more are `skipped`) |\n")
}

// envTables writes the expression environment (EnvFunctions, EnvVariables).
func envTables(w writeFunc) {
	w("\n## Expression environment\n\n| function | doc |\n|---|---|\n")
	for _, f := range model.EnvFunctions {
		w("| `%s` | %s |\n", f.Signature, cell(f.Doc))
	}
	w("\n| variable | doc |\n|---|---|\n")
	for _, v := range model.EnvVariables {
		w("| `%s` | %s |\n", v.Name, cell(v.Doc))
	}
	w("| `vars.index`, `vars.item` | inside a repeat body: the 1-based iteration; in for_each bodies the current item |\n")
}

// limitsTable writes DefaultLimits with limitDocs.
func limitsTable(w writeFunc) {
	w("\n## Limits\n\nA request beyond a request bound is refused before any work (an HTTP body with status 413, an argument with the request error `resource_exhausted` naming it); validation beyond a validation bound is the request error `resource_exhausted`; a run beyond an execution bound ends with status `limit_exceeded` or `timeout`.\n\n")
	w("| limit | default | bounds |\n|---|---|---|\n")
	lv := reflect.ValueOf(core.DefaultLimits)
	for i := 0; i < lv.NumField(); i++ {
		f := lv.Type().Field(i)
		w("| `%s` | %v | %s |\n", f.Name, lv.Field(i).Interface(), cell(limitDocs[f.Name]))
	}
}

var limitDocs = map[string]string{
	"MaxRequestBytes": "size of an HTTP request body (beyond: HTTP 413) and of one stdio line (beyond: a parse error)",
	"MaxArgBytes":     "bytes of each string argument of a tool: ids, q, cursor, names, keys (beyond: `resource_exhausted`)",
	"MaxInputBytes":   "JSON bytes of execute's input and of its context, what a run may store of them (beyond: `resource_exhausted`)",
	"MaxProgramBytes": "size of a program in bytes",
	"MaxNodes":        "JSON values in a program",
	"MaxDepth":        "nesting of if/choose/repeat step lists",
	"MaxExprNodes":    "syntax nodes per expression",
	"MaxExprLen":      "characters per expression",
	"ValidateWall":    "wall time of one validation",
	"MaxSteps":        "trace entries per run",
	"MaxIterations":   "iterations per loop activation; the largest count or max a loop may declare",
	"MaxWall":         "duration of one run (virtual time in a test run)",
	"MaxCallDepth":    "nested calls of promoted automations (checked at validate, and at execute for an automation given to a catalog param)",
	"MemoryBudget":    "expression evaluation memory budget",
	"MaxConcurrent":   "the largest max a queued or parallel rule may declare",
	"MaxSetValues":    "JSON values set steps store in one run (each value is copied; nested at most 64 deep)",
	"MaxValueBytes":   "bytes of one string, list or object an expression, template or set step makes (compact JSON size)",
	"MaxEvalBytes":    "bytes one expression evaluation builds in all (string +, repeat, join, replace, split, toJSON, list and object literals, …)",
	"MaxRunBytes":     "bytes one run records, measured as JSON with its escapes: trace inputs, outputs and decisions, call records, the output vars (bounds the stored run)",
	"MaxEvalOps":      "operations one expression or template evaluation may do: each iteration of map, filter, all, sum, groupBy, reduce, …; each builtin and comparison by the size of what it walks (beyond: `limit_exceeded`)",
	"MaxRunOps":       "operations all the evaluations of one run may do together, counted as MaxEvalOps counts them; each evaluation may do at most what the run has left (beyond: `limit_exceeded`)",
	"MaxTestRunWall":  "real time a test run may take (its clock is virtual; beyond: `timeout`)",

	"MaxConnections":             "HTTP connections open at once (beyond: the oldest idle one is closed, or the new one)",
	"MaxStreams":                 "event streams open at once: GET /mcp and the web UI's /events (beyond: HTTP 503)",
	"MaxStreamsPerPrincipal":     "event streams one principal holds open (beyond: HTTP 429)",
	"MaxSessions":                "MCP sessions live at once (beyond: initialize is refused with HTTP 503)",
	"MaxSessionsPerPrincipal":    "MCP sessions one principal holds (beyond: its least recently used session without a stream ends)",
	"SessionIdle":                "an MCP session unused this long, with no open stream, ends (its next request: HTTP 404, initialize again)",
	"MaxServedRunBytes":          "memory of stored runs being read and execute answers being sent at once (pilotage_trace, the web UI's run pages, pilotage_execute's answers); a read or a test run's answer that finds no room within 2 s is refused with `resource_exhausted` (web: 503), a deploy's answer is sent with its trace cut to the summary",
	"MaxStoredTestRuns":          "test runs one principal keeps stored within the retention (beyond: a stored test run is refused with `resource_exhausted`; store: false still runs)",
	"MaxStoredTestBytes":         "bytes of the test-run records one principal keeps stored (beyond: as MaxStoredTestRuns)",
	"MaxStoredRuleBytes":         "bytes of one rule's stored firings (beyond: the oldest are deleted, never the newest of each outcome; counted as `trimmed` on /healthz)",
	"MaxStoredFiringBytes":       "bytes of the stored firings of all one principal's rules, not an admin's; checked after each eighth of it written (beyond: as MaxStoredRuleBytes, but a rule's newest of an outcome over 64 KiB goes too; counted as `trimmed_principal`)",
	"MaxRulesPerPrincipal":       "rules one principal other than an admin (the owner) keeps installed (beyond: a deploy of a new rule is refused with `resource_exhausted`, nothing installed)",
	"MaxLiveFiringsPerPrincipal": "firings of one principal's rules (not an admin's) running or queued (mode queued) at once, those waiting in a delay or wait step included (beyond: a new firing is refused, recorded `skipped` with the limit named, counted in /healthz `runs.firings_refused`)",
	"MaxLiveFiringsAdmin":        "firings of one admin's rules (the owner's) running or queued at once, counted as MaxLiveFiringsPerPrincipal (beyond: refused the same way, with this limit named)",
}

// deviceTypesTable writes pilotage.DeviceTypes, the table the catalog
// types devices and risks their actions from.
func deviceTypesTable(b *strings.Builder) {
	b.WriteString("\n## Device types\n\nA device entry's `type:` tag, and the risk of its set action (a get action, which only asks for fresh values, is `read`). ")
	b.WriteString("A Zigbee2MQTT device takes the first row it matches: by what it exposes, or by one of the words in its description. ")
	b.WriteString("A Home Assistant device likewise, by its entities' components (its config and diagnostic entities only when it has no other), or by the words in its name or model; all its actions take the row's risk.\n\n")
	b.WriteString("| type | risk | recognised by |\n|---|---|---|\n")
	for _, d := range pilotage.DeviceTypes {
		by := d.Means
		if len(d.Words) > 0 {
			by += `; or "` + strings.Join(d.Words, `", "`) + `" in the description`
		}
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", d.Type, d.Risk, cell(by))
	}
}

func statusTable(b *strings.Builder, title, intro string, rows []core.StatusInfo) {
	fmt.Fprintf(b, "\n## %s\n\n%s `ok` is the outcome's `ok`; side effects says whether devices may have been commanded when the status is reported.\n\n", title, intro)
	b.WriteString("| status | ok | side effects | meaning |\n|---|---|---|---|\n")
	for _, s := range rows {
		fmt.Fprintf(b, "| `%s` | %t | %s | %s |\n", s.Status, s.OK, s.SideEffects, cell(s.Meaning))
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// YesNo is a table cell for a flag.
func YesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// CodeList is ss as a comma-separated list of code spans.
func CodeList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, ", ")
}

const closedSetsProse = `
## Scope rules

- A ` + "`set`" + ` step makes ` + "`vars.<name>`" + ` addressable in the steps after it, in the same step list and in lists nested inside those steps.
- A finished step makes ` + "`steps.<id>.output`" + ` addressable the same way; condition ids are addressable in the body (` + "`steps.<condition id>.output`" + ` is true).
- A value produced inside a branch arm (` + "`then`, `else`" + `, a choose arm, ` + "`default`" + `) or a loop body (` + "`do`" + `) is addressable only later inside that same arm or body. After the ` + "`if`/`choose`/`repeat`" + ` ends it is not addressable, even if every arm sets it: that is the diagnostic ` + "`scope`" + `.
- To use a value after a branch, set a default before the branch and set it again inside the arms: ` + "`vars`" + ` is one map per run, so the arm's assignment is what you read afterwards.
- A step id that has not run yet at that point (a later step, the step itself) or no step at all is ` + "`unknown_step`" + `. The ` + "`if`/`choose`/`repeat`" + ` step's own id is addressable after it (a repeat's output is ` + "`{iterations}`" + `).
- ` + "`vars.index`" + ` is addressable inside every repeat body, ` + "`vars.item`" + ` inside for_each bodies; a ` + "`while`" + ` and an ` + "`until`" + ` expression see the body's scope. All values of one ` + "`set`" + ` are computed before any is assigned.
- Catalog ids in ` + "`state('…')`, `since('…')` and `last_changed('…')`" + ` must be string constants (or ` + "`params.<name>`" + ` of a catalog param of kind state or event), and these readers may only be called directly: an alias (` + "`let s = state`" + `), a reader passed as a value, and ` + "`$env`" + ` are refused too (` + "`non_constant_reference`" + `), so every reference is known before the program runs.

## Input and params

The program's ` + "`params`" + ` member is a JSON Schema of an object (type ` + "`object`" + `). execute ` + "`input`" + ` is bound to ` + "`params`" + ` for inline programs: the input object is checked against that schema (findings: ` + "`input_binding`" + `, path into input), defaults are filled in, and expressions read it as ` + "`params.<name>`" + `. A program without params takes no input. A promoted automation called from another program receives the call's ` + "`args`" + ` as its params.

For a promoted program (` + "`program_ref`" + `) the same holds: ` + "`input`" + ` is its params object, checked against the automation entry's ` + "`input_schema`" + `.

Formats are asserted: a param declared ` + "`{\"type\": \"string\", \"format\": \"duration\"}`" + ` must be a duration as automation/1 writes them (` + "`\"90s\"`, `\"2m\"`, `\"PT2M\"`" + `), the other JSON Schema formats as JSON Schema defines them; a ` + "`default`" + ` that does not fit its param's schema is ` + "`bad_params`" + `. Input binding goes further than the schema: execute checks the program with the input's values (params-only templates such as ` + "`\"{{ params.hold }}\"`" + ` are computed, so a delay, a loop count or a call argument that would fail the first run fails the execute instead, as ` + "`input_binding`" + ` at the member, with the program path in the message).

**Catalog params.** A top-level property of ` + "`params`" + ` with the member ` + "`catalog`" + ` is a catalog reference: its value is a catalog id. ` + "`catalog`" + ` has ` + "`kind`" + ` (required: ` + "`state`, `event`, `action`, `automation`" + `), ` + "`type`" + ` (a device type of the table above: the entry's device carries ` + "`type:<type>`" + `), ` + "`tag`" + ` (the entry or its device carries it, case-insensitive), ` + "`accepts`" + ` (actions and automations: ` + "`{argument: value or [values]}`" + ` its ` + "`input_schema`" + ` must accept), ` + "`reports`" + ` (states and events: values its ` + "`output_schema`" + ` must admit) and ` + "`max_risk`" + `. In the body exactly ` + "`\"{{ params.<name> }}\"`" + ` stands for the id where an id goes (` + "`call`" + `, a trigger's or a wait's ` + "`state`/`event`" + `), and ` + "`state(params.<name>)`" + ` (likewise ` + "`since`, `last_changed`" + `) reads it in expressions; any other template there is ` + "`templated_id`" + `. Validation without input plans a call through a catalog param without ` + "`calls`" + ` and with the worst risk its constraint admits (` + "`max_risk`" + `; without it destructive and openWorld); a promoted program's entry declares that risk. Execute binds: every catalog param needs an id (from input or its default) that is visible to the caller (an invisible id reads exactly like a missing one) and fits, and then the program is validated with the ids in place; findings are ` + "`input_binding`" + ` at ` + "`/<param>`" + `. An installed rule runs, plans and traces the bound program; who may see the rule follows its bound ids as it follows every reference. A call to a promoted automation passes each of its catalog params an id (checked, and joining the caller's references) or ` + "`\"{{ params.<name> }}\"`" + ` of the caller's own catalog param with at least the same constraints; with constant arguments the automation's body is checked with them (` + "`bad_arguments`" + `).

For test runs ` + "`input`" + ` may also carry the reserved member ` + "`scenario`" + ` beside the params: ` + "`{\"<param>\":…,\"scenario\":{\"trigger\":\"<trigger id>\",\"value\":…,\"from\":…,\"state\":{\"id\":value},\"now\":\"RFC3339\",\"timeline\":[{\"at\":\"90s\",\"state\":{\"id\":value},\"event\":{\"id\":payload}}],\"last_run\":\"-20m\",\"waits\":{\"<wait step id>\":\"met\"|\"timeout\"}}}`" + `. ` + "`scenario`" + ` is never a param (a params schema may not declare it: ` + "`bad_params`" + `) and is refused without test_run; it picks the trigger that fires (default the first), its value and previous value, state overrides, the virtual clock at the start, a timeline of state changes and events at offsets on the virtual clock (negative: before the start), when the body last ran (for a throttle), and, as an assumption, how a wait ends. Held triggers fire only after their hold, schedules only at a time they fire (else the run is ` + "`not_triggered`" + `), waits resolve from the timeline or time out, and a forced wait is ` + "`assumed`" + ` (see the ` + "`test-runs`" + ` guide).

**Which rule a deploy installs.** A deploy installs the rule named after its program, and ` + "`input`" + ` may carry a second reserved member, ` + "`install`" + ` (deploys only, never a param): ` + "`{\"rule\": \"<rule name>\", \"replace\": true}`" + `, both optional. ` + "`rule`" + ` names the rule to install (an instance name: the same program for the porch and for the hall under two names); without it, the same promoted program deployed again with another input becomes a second rule named after that input (` + "`motion-light-porch_light-hall_motion`" + `) instead of replacing the first. Deploying exactly the installed program with the same input changes nothing (` + "`output.unchanged`" + `, no run cancelled). Nothing is replaced silently: when a rule of the target name is installed and runs another program or input, a deploy without ` + "`\"replace\": true`" + ` installs nothing and ends ` + "`rule_exists`" + `, its ` + "`replaces`" + ` member (beside ` + "`outcome`" + `) naming that rule's ` + "`program_ref`" + `, ` + "`input`" + `, ` + "`principal`" + `, ` + "`enabled`" + ` and ` + "`runs_in_progress`" + ` (which replacing it cancels); validate says the same beforehand (` + "`replaced_rule`" + `). Send the request again with ` + "`replace: true`" + ` to replace it, or with another ` + "`rule`" + ` to keep both. A risky deploy's approval is for one rule name.

validate takes no ` + "`context`" + `: automation/1 declares no context_schema, so a supplied context is a ` + "`context_binding`" + ` finding at path ` + "`\"\"`" + `.

## Output of a run

- Deploy (execute without test_run): ` + "`output`" + ` is ` + "`{program_ref, rule, replaced, triggers, next_fire, time_zone}`" + `: the promoted body's reference, the installed rule's name (see **Which rule a deploy installs** below), whether it replaced one, the armed triggers, the next scheduled firing (when known; local, with its UTC offset) and the server's time zone, which schedules are in; with catalog params also ` + "`plan`" + `, the installed rule's plan with the bound ids, and ` + "`warnings`" + ` of the bound program (` + "`overlapping_rule`" + `). The deploy trace describes the installation (promote, bind when there are catalog params, install, arm); the plan describes the body.
- Test run: ` + "`output`" + ` is ` + "`{calls: [...], vars}`" + `: each call the body would have made (` + "`step`" + `, catalog ` + "`id`" + `, ` + "`args`" + `, ` + "`output`" + `, ` + "`at`" + `) and the final variables; with catalog params also ` + "`plan`" + `, the plan a deploy with the same input installs (real ids and risk: what to gate on).
- Each firing of an installed rule is its own run with its own run id, outcome and trace; when ` + "`ok`" + `, its ` + "`output`" + ` is ` + "`{calls: [...], vars}`" + ` as for a test run, except that the calls were really published.

## Trace format

- Identity: each trace entry's ` + "`id`" + ` is the program's own step id. Entries inside a loop body carry the iteration: ` + "`toggle#2`" + ` is body step ` + "`toggle`" + ` in iteration 2 of its loop (nested loops add one ` + "`#n`" + ` per enclosing loop, outermost first: ` + "`flip#2#3`" + `). Entries of a promoted automation run through a ` + "`call`" + ` step are prefixed with the calling entry's id and ` + "`/`" + `: ` + "`script_call#1/inner#3`" + `. That is why ids may not contain ` + "`#`" + ` or ` + "`/`" + `.
- The reserved step ` + "`triggers`" + ` comes first in every plan and trace: a branch whose arms are the trigger ids. In a trace its decision's ` + "`took`" + ` is the trigger that fired, followed by that trigger's entry (output: the trigger value), then the conditions, then the body.
- Decisions: a branch (` + "`if`" + `, ` + "`choose`" + `, ` + "`triggers`" + `) records one decision whose ` + "`took`" + ` is the arm label taken (` + "`then`" + `, ` + "`else`" + `, a choose label, ` + "`default`" + `, or a trigger id); a loop records one decision per evaluation, ` + "`took`" + ` = ` + "`continue`" + ` or ` + "`exit`" + `, with ` + "`because`" + ` saying why.
- Nesting (Pilothouse's addition): an entry that ran inside another (an arm of a branch, including the trigger's entry under ` + "`triggers`" + `; a loop's body; a called automation's body) has ` + "`parent`" + `, the id of that entry; top-level entries have none.
- Values read: a condition's entry and a branch's entry (` + "`if`" + `, ` + "`choose`" + `) have as ` + "`input`" + ` the values their expressions read, keyed by what was read (` + "`state('hall.lux')`" + `, ` + "`trigger.to`" + `, ` + "`vars.n`" + `, ` + "`now()`" + `), each cut like a summary output, at most 12 (the key ` + "`…`" + ` says when more were read).
- Levels: ` + "`full`" + ` carries each entry's ` + "`input`" + ` and ` + "`output`" + `. Summary traces omit ` + "`input`" + ` and replace an ` + "`output`" + ` whose JSON exceeds 256 bytes with ` + "`{\"truncated\": true, \"bytes\": N, \"preview\": \"<first 200 chars of the JSON>\"}`" + `.

## Plan format

The plan describes the deployed body. Steps in order: the branch ` + "`triggers`" + ` (kind ` + "`trigger`" + `), one step per trigger (kind ` + "`trigger:<kind>`" + `, ` + "`arm: {branch: \"triggers\", label: <trigger id>}`" + `), one per condition (kind ` + "`condition`" + `), then the body: every step with its step kind; ` + "`call`" + ` steps list the entry in ` + "`calls`" + ` with its risk; ` + "`if`" + `/` + "`choose`" + ` are branch steps followed by the steps of every arm carrying ` + "`arm: {branch: <id>, label}`" + `; ` + "`repeat`" + ` is a loop step followed by its body once, carrying ` + "`loop: <repeat id>`" + `. A step names only its innermost construct: an arm inside a loop carries ` + "`arm`" + `, a loop inside an arm gives its body ` + "`loop`" + `. A call to a promoted automation is one step with the automation's declared risk.

## Step identifiers

Programs have native ids (` + "`id`" + ` on every trigger, condition and step), so no identifiers are generated: plans and traces use them as written. Ids are 1-64 characters, unique across triggers, conditions and steps, without ` + "`#`" + ` or ` + "`/`" + `, and not ` + "`triggers`" + `.
`
