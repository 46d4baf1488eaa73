// Package rules is the automation/1 Language: the program model, decoding
// with JSON Pointer locations, validation with closed diagnostics,
// expressions (expr-lang/expr), plan derivation, the interpreter that runs a
// body against a World (live or simulated), and the guides. It is pure: no
// MQTT, no SQL; it sees a catalog snapshot and a World.
//
// This package is the facade the rest of Pilothouse imports: it re-exports
// (facade.go) what the stages under internal/ offer.
// Each stage is one package, and imports point up this list:
//
//   - core: limits, closed sets of codes and statuses, located JSON
//   - clock: durations, cron schedules, sun events
//   - model: program, expressions and templates, run form, World, Cache
//   - decode: JSON text to a model.Program
//   - interp: a run against a World, and its trace
//   - plan: the deploy-mode plan and its sentences
//   - validate: diagnostics, input binding, lowering to the run form
//   - sim: the simulated World of test runs
//   - guides: the teaching guides, served by id and section
package rules

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/guides"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/plan"
	"github.com/pilothouse/pilothouse/rules/internal/sim"
	"github.com/pilothouse/pilothouse/rules/internal/validate"
)

// AsyncCaller is a World whose calls can be acknowledged after they
// return (the engine's live world over a broker connection).
type AsyncCaller = interp.AsyncCaller

// BuildPlan derives the deploy-mode plan of a valid program (spec §5.6): it
// describes the body. The first step is the branch "triggers" whose arms are
// the triggers (kind "trigger:<kind>"), then the conditions, then the body:
// branches and loops are steps of their own, every arm's steps are listed
// with arm, loop bodies once with loop (arm wins inside a loop: the
// innermost construct is named). A call's risk is its entry's as validated
// (c.Entry). It is a function of c alone: a held program's plan is derived
// again whenever it is needed, rather than held.
func BuildPlan(c *Compiled) *pilotage.Plan {
	return plan.BuildPlan(c)
}

// Cache is what rules reuses from one validation or run to the next:
// prepared expr configurations, compiled expression programs shared by
// source, compiled catalog schemas, the table run forms share their equal
// parts through (intern.go), and pools of expression environments and
// VMs. The engine makes one and hands it to Validate
// (ValidateOptions.Cache) and Run (RunInput.Cache); rules keeps no state
// of its own between calls. A nil *Cache reuses nothing: everything
// is made anew, with the same results.
//
// Every table of a Cache is a memo: bounded, and started over when full.
// Reuse is an optimization, so losing it costs time, never correctness.
type Cache = model.Cache

// CallRecord is one World.Call the run made.
type CallRecord = interp.CallRecord

// Catalog is the validator's view of the catalog: only the entries visible
// to the caller (spec §6.3 authorization scope). Hints and "unknown name"
// findings are computed from it alone, so invisible names are
// indistinguishable from nonexistent ones.
type Catalog = model.Catalog

// CheckCorrespondence checks a trace against the plan of the program that
// produced it (spec §5.8.4). Only unprefixed entries (no "/") take part.
// The expected set is: plan steps outside arms and loops; arm steps whose
// branch has an entry that took their label; loop-body steps without arm
// whose loop has an entry with at least one "continue". On success every
// expected step must appear; otherwise every unprefixed entry must be
// expected; in all cases steps of unselected arms are absent. It also
// checks two neighbouring rules: trace ids are unique (§5.8.2 "exactly
// once") and an entry's calls are among its plan step's calls.
func CheckCorrespondence(plan *pilotage.Plan, tr []pilotage.TraceStep, outcome pilotage.Outcome) error {
	return interp.CheckCorrespondence(plan, tr, outcome)
}

// CheckParams checks execute's params value (the program's input: the
// whole input for a deploy, input.params in a test run) against c's
// params schema. Findings carry code input_binding and a JSON
// Pointer into input, prefixed with at ("" or "/params").
func CheckParams(c *Compiled, params any, at string) []pilotage.Diagnostic {
	return validate.CheckParams(c, params, at)
}

// CheckScenario reports scenario members that name nothing in the program:
// an unknown trigger, or a waits key that is not a wait step.
func CheckScenario(c *Compiled, sc Scenario) []pilotage.Diagnostic {
	return sim.CheckScenario(c, sc)
}

// CheckScenarioIDs reports the ids of scenario.state and the timeline
// that are not entries of the right kind as get (the caller's catalog)
// sees them, and the values their output_schema refuses (the states',
// and the value and from the scenario fires c's trigger with).
func CheckScenarioIDs(c *Compiled, sc Scenario, get func(id string) (*pilotage.Entry, bool), cache *Cache) []pilotage.Diagnostic {
	return sim.CheckScenarioIDs(c, sc, get, cache)
}

// ClosedSetsTopic is the reserved topic of the one closed-sets guide.
const ClosedSetsTopic = guides.ClosedSetsTopic

const CodeCallDepth = core.CodeCallDepth

const CodeContextBinding = core.CodeContextBinding

const CodeInputBinding = core.CodeInputBinding

const CodeReplacedRule = core.CodeReplacedRule

// Codes is the closed set of diagnostic codes, each with its fixed severity.
var Codes = core.Codes

// Compiled is a validated program, ready to plan, install and run: what
// validation found (its references, plan, callees) and the program
// lowered into its run form (runform.go), which the interpreter, the
// planner and the scheduler read through it. It is produced once by
// Validate and immutable afterwards.
type Compiled = model.Compiled

// DefaultLimits are the budgets in force unless configured otherwise.
var DefaultLimits = core.DefaultLimits

// ErrNotAcknowledged marks a call that was published but not acknowledged
// by the broker in time: it may still arrive. The engine's live World
// wraps the mqtt package's error with it, so the run ends with status
// not_acknowledged instead of failed (a retry could apply it twice).
var ErrNotAcknowledged = interp.ErrNotAcknowledged

// ErrNotConnected marks a call that could not be published because the MQTT
// broker is unreachable. The engine's live World wraps the mqtt package's
// error with it, so the run ends with status not_connected instead of failed.
var ErrNotConnected = interp.ErrNotConnected

// EventMatches reports whether an event's payload passes a value filter:
// no filter, the value itself, or, for a list, any of its values
// (["double", "triple"]).
func EventMatches(filter Value, payload any) bool {
	return model.EventMatches(filter, payload)
}

// FireFor picks the trigger activation a scenario describes: its trigger
// (default the program's first), value (default the trigger's `to` (the
// first of an event's set), else the current state of its entity, else a
// value inside a numeric trigger's bounds, else the clock for time
// triggers) and from. When w is a *SimWorld the activation is simulated
// honestly (see simulate): a state trigger's entity takes the fired value
// unless the scenario's state overrides it, a held trigger fires only
// after its hold on the virtual clock, a schedule only at a time it
// fires; otherwise the activation's NotFired says why not. Because is
// "test run: scenario".
func FireFor(c *Compiled, sc Scenario, w World) (TriggerFire, error) {
	return sim.FireFor(c, sc, w)
}

// Guide is one teaching unit of automation/1 (spec §5.2).
type Guide = guides.Guide

// GuideByID returns one guide.
func GuideByID(id string) (Guide, bool) {
	return guides.GuideByID(id)
}

// Guides returns every guide, in index order (bodies included).
func Guides() []Guide {
	return guides.Guides()
}

const InstallInputMember = decode.InstallInputMember

// InstalledRules is the validator's view of the rules installed in the
// house, scoped to what the caller may see (the engine implements it):
// a program that drives the same device from the same trigger as another
// rule gets an overlapping_rule warning.
type InstalledRules = validate.InstalledRules

// InstalledTrigger is one trigger of an installed rule.
type InstalledTrigger = validate.InstalledTrigger

// JoinList joins items the way a sentence lists them: "a", "a and b",
// "a, b and c" (conj "and" or "or"; no serial comma).
func JoinList(items []string, conj string) string {
	return core.JoinList(items, conj)
}

// CloseMatches returns up to limit candidates close to s, the most
// similar first: the one did-you-mean ranking diagnostics use.
func CloseMatches(s string, candidates []string, limit int) []string {
	return core.CloseMatches(s, candidates, limit)
}

// HintFor is the did-you-mean sentence for matches ("" for none).
func HintFor(matches []string) string { return core.HintFor(matches) }

// Language is the one Language identifier this package implements.
const Language = model.Language

// Limits are the named budgets of validation and execution (spec §10.1).
// They live in one place; DefaultLimits is what the server uses unless the
// configuration overrides a value.
type Limits = core.Limits

// Location is a point on Earth, in degrees, for sun triggers and
// conditions.
type Location = clock.Location

// LookupStatus finds a status in a table.
func LookupStatus(table []StatusInfo, status string) (StatusInfo, bool) {
	return core.LookupStatus(table, status)
}

const ModeParallel = model.ModeParallel

const ModeQueued = model.ModeQueued

const ModeRestart = model.ModeRestart

// NewCache makes an empty Cache.
func NewCache() *Cache {
	return model.NewCache()
}

// NewSimWorld builds a scratch world over base (the live state reader, may
// be nil) starting at start (or sc.Now). effects maps an action call to the
// state changes it would cause (state id → new value); when it is nil or
// returns nil, the fallback convention applies: a call of "<device>.set"
// with argument k sets state "<device>.k" if that state exists.
func NewSimWorld(base func(id string) (any, bool), start time.Time, sc Scenario, effects func(actionID string, args map[string]any) map[string]any) *SimWorld {
	return sim.NewSimWorld(base, start, sc, effects)
}

// NextSunEvent is the next sunrise or sunset (+offset) strictly after now,
// in now's location; through polar day or night it is the first one after
// it (zero when there is none within sunHorizonDays).
func NextSunEvent(now time.Time, loc Location, which string, offset time.Duration) time.Time {
	return clock.NextSunEvent(now, loc, which, offset)
}

// OutcomeSentence says how a run ended, as a person would: "The run
// succeeded.", "The run failed: <reason>." An error that repeats the
// status ("throttled: …") is not prefixed twice.
func OutcomeSentence(status string, errText string) string {
	return plan.OutcomeSentence(status, errText)
}

// ParseDuration accepts Go durations ("500ms", "2m", "1h30m") and ISO 8601
// durations ("PT2M"), the two forms home-automation users write.
func ParseDuration(s string) (time.Duration, error) {
	return clock.ParseDuration(s)
}

// ParseScenario splits execute's input for a test run, by the documented
// convention:
//
//	{"params": {…program params…},
//	 "scenario": {"trigger": "<trigger id>", "value": …, "from": …,
//	              "state": {"<state id>": value}, "now": "RFC 3339",
//	              "timeline": [{"at": "90s", "state": {…}, "event": {…}}],
//	              "last_run": "RFC 3339" | "-20m",
//	              "waits": {"<wait step id>": "met" | "timeout"}}}
//
// Both members are optional. Shapes that do not fit give input_binding
// diagnostics whose paths point into input ("/scenario/now").
func ParseScenario(input map[string]any) (params map[string]any, sc Scenario, diags []pilotage.Diagnostic) {
	return sim.ParseScenario(input)
}

// Place is where runs happen: the server's time zone (clock times of
// schedules and time conditions) and location (sun events; nil when not
// known).
type Place = clock.Place

// Plural is n with the noun in the number n needs: "1 trigger",
// "2 triggers", "0 conditions". many "" adds an s to one.
func Plural(n int, one string, many string) string {
	return core.Plural(n, one, many)
}

// Program is a decoded automation/1 program. Every node keeps the JSON
// Pointer it was decoded from (Ptr), so diagnostics and traces can locate it.
type Program = model.Program

const ReservedInputMember = decode.ReservedInputMember

// Result is the outcome of Validate.
type Result = validate.Result

// Run executes a compiled program against w: the trigger entry, the
// conditions in order, then the body. It never panics and never returns
// nil; the outcome is authoritative and Steps is the trace so far.
//
// The trace starts with the "triggers" branch entry (took = trigger id)
// and the trigger's entry (output = its value), then one entry per
// condition (output true/false), then the body in execution order with
// flat identities (spec §5.8.2). Run statuses: success; conditions_not_met
// (ok, a condition was false); stopped (ok, a stop step); failed (a call
// was refused, an expression failed, stop with error, a panic);
// not_connected (a call's error wraps ErrNotConnected); not_acknowledged
// (it wraps ErrNotAcknowledged); timeout (a wait
// timed out without continue_on_timeout, the MaxWall bound on the World
// clock, or ctx's deadline); limit_exceeded (MaxSteps entries,
// MaxIterations per loop activation, MaxCallDepth, expression memory,
// MaxValueBytes and MaxEvalBytes for what an evaluation builds,
// MaxRunBytes for what the run records, MaxSetValues and MaxValueDepth
// for values set steps store, MaxEvalOps for an evaluation's operations,
// MaxRunOps for the operations of all its evaluations together);
// cancelled (ctx cancelled; the engine reports shutdowns as interrupted).
// A branch or loop entry's outcome is that of its activation: success, or
// the status of the step that ended it.
func Run(ctx context.Context, c *Compiled, w World, in RunInput) (res *RunResult) {
	return interp.Run(ctx, c, w, in)
}

// RunInput is everything a run starts from besides the program and World.
type RunInput = interp.RunInput

// RunResult is a finished (or ended) run. Steps is the full-detail trace;
// TraceAt derives the level a caller asked for.
type RunResult = interp.RunResult

// RunStatuses is the one closed table of run-level statuses; the engine
// reports only these and the closed-sets guide is generated from it.
var RunStatuses = core.RunStatuses

// RunTrigger is one trigger of a run form: what the engine's scheduler
// arms and matches changes against.
type RunTrigger = model.RunTrigger

// SameValue compares JSON-ish values the way triggers and event waits
// match them: numbers by value (a number's text too), strings exactly, the
// rest deeply.
func SameValue(a any, b any) bool {
	return model.SameValue(a, b)
}

// Scenario is what a test run pretends: which trigger fires with what
// value, state overrides, a fixed clock, a timeline of what happens after
// (and before) the start, and assumptions about waits. It is decoded from
// execute's input by ParseScenario.
type Scenario = sim.Scenario

// SectionOf returns the "## " section of a guide body by its slug.
func SectionOf(body string, topic string) (string, bool) {
	return guides.SectionOf(body, topic)
}

// SimWorld is a scratch World for test runs: a virtual clock advanced only
// by delays and waits, state reads that see the scenario's overrides and
// the simulated effects of earlier calls, and calls that are recorded
// instead of published. It has no side effect outside itself.
type SimWorld = sim.SimWorld

// Later is what a simulated call makes happen on its own on a test run's
// virtual clock (a timer's end).
type Later = sim.Later

const StatusApprovalPending = core.StatusApprovalPending

const StatusBroken = core.StatusBroken

const StatusCancelled = core.StatusCancelled

const StatusCatalogDrift = core.StatusCatalogDrift

const StatusConditionsNotMet = core.StatusConditionsNotMet

const StatusDenied = core.StatusDenied

const StatusFailed = core.StatusFailed

// StatusInfo is one row of a closed status table (spec §5.7): its ok value
// and whether side effects may have occurred when it is reported.
type StatusInfo = core.StatusInfo

const StatusInterrupted = core.StatusInterrupted

const StatusLimitExceeded = core.StatusLimitExceeded

const StatusNotAcknowledged = core.StatusNotAcknowledged

const StatusNotConnected = core.StatusNotConnected

const StatusNotTriggered = core.StatusNotTriggered

const StatusPartial = core.StatusPartial

const StatusPromotionDrift = core.StatusPromotionDrift

const StatusRuleExists = core.StatusRuleExists

const StatusRunning = core.StatusRunning

const StatusSkipped = core.StatusSkipped

const StatusSuccess = core.StatusSuccess

const StatusThrottled = core.StatusThrottled

const StatusTimeout = core.StatusTimeout

const StatusValidationError = core.StatusValidationError

// Step is one body step, as decoded: exactly the fields of its Kind are
// set; Children walks its child step lists.
type Step = model.Step

const StepApprovalPending = core.StepApprovalPending

const StepFailed = core.StepFailed

// StepKinds is the closed set of step kinds, in the order the decoder
// tries their members and the closed-sets guide lists them. The decoder,
// validator, interpreter, planner and guide all read it.
var StepKinds = model.StepKinds

const StepLimitExceeded = core.StepLimitExceeded

const StepNotConnected = core.StepNotConnected

const StepNotMet = core.StepNotMet

// StepSentence says how a step ended: `Step "on" failed: <reason>.`
func StepSentence(id string, status string, errText string) string {
	return plan.StepSentence(id, status, errText)
}

// StepStatuses is the one closed table of step-level statuses.
var StepStatuses = core.StepStatuses

const StepSuccess = core.StepSuccess

// SunPhrase is "sunset", "15 minutes after sunset" or "1 hour and 30
// minutes before sunrise".
func SunPhrase(event string, off time.Duration) string {
	return clock.SunPhrase(event, off)
}

// SunTimes returns sunrise and sunset of the local day of t (the calendar
// day in t's location) at loc, using the NOAA solar position
// approximation (accurate to about a minute), in t's location. ok is false
// during polar day or night.
func SunTimes(t time.Time, loc Location) (rise time.Time, set time.Time, ok bool) {
	return clock.SunTimes(t, loc)
}

// TraceAt renders the full-detail steps of a run at a trace level: "full"
// returns them as they are, "summary" drops every input and truncates large
// outputs, "none" (or any other value) returns nil. steps is not modified.
func TraceAt(steps []pilotage.TraceStep, level string) *pilotage.Trace {
	return interp.TraceAt(steps, level)
}

// TriggerAvailable watches whether an entry's device is reachable.
const TriggerAvailable = model.TriggerAvailable

const TriggerCron = model.TriggerCron

const TriggerEvent = model.TriggerEvent

// TriggerFire is the trigger activation that starts a run.
type TriggerFire = model.TriggerFire

// TriggerKinds is the closed set of trigger kinds, in the order the guide
// lists them; their keys, in this order, are the members the decoder
// tries.
var TriggerKinds = model.TriggerKinds

const TriggerNumeric = model.TriggerNumeric

const TriggerState = model.TriggerState

const TriggerSun = model.TriggerSun

const TriggerTime = model.TriggerTime

// TriggersStepID is the id of the trigger branch in plans and traces: its
// arms are the trigger ids, and a run's decision names the one that fired.
const TriggersStepID = interp.TriggersStepID

// ValidName reports whether s may name a program or a rule.
func ValidName(s string) bool {
	return decode.ValidName(s)
}

// Validate decodes and checks a program against a caller-scoped catalog
// snapshot. Invalid programs are a normal Result with Valid false; the
// error is a *pilotage.RequestError (resource_exhausted) when a validation
// bound is exceeded. Validate has no side effect.
func Validate(raw []byte, cat Catalog, o ValidateOptions) (*Result, error) {
	return validate.Validate(raw, cat, o)
}

// ValidateOptions are the inputs of Validate besides the program and the
// catalog snapshot.
type ValidateOptions = validate.ValidateOptions

// Value is an optional JSON literal (to/from/value filters).
type Value = model.Value

// WaitRequest is one wait step as the World sees it.
type WaitRequest = model.WaitRequest

// WithSection returns g with a "## " section appended (a server's own
// facts, such as its time zone): version, size and topics follow the
// new body.
func WithSection(g Guide, section string) Guide {
	return guides.WithSection(g, section)
}

// World is everything a running body may touch. The engine provides a live
// World (MQTT, real timers); test runs use SimWorld (scratch state, virtual
// clock, no side effect). The interpreter never reaches past it.
type World = model.World
