package interp

// The trace as callers read it: its levels, its check against the plan,
// and the texts its entries say (why a trigger fired, values in reasons).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// Summary truncation (documented in the closed-sets guide): an output whose
// compact JSON encoding is longer than TruncateOver bytes is replaced by
// {"truncated": true, "bytes": N, "preview": "<first TruncatePreview
// characters of that JSON>"}.
const (
	TruncateOver    = 256
	TruncatePreview = 200
)

// TraceAt renders the full-detail steps of a run at a trace level: "full"
// returns them as they are, "summary" drops every input and truncates large
// outputs, "none" (or any other value) returns nil. steps is not modified.
func TraceAt(steps []pilotage.TraceStep, level string) *pilotage.Trace {
	if steps == nil {
		steps = []pilotage.TraceStep{}
	}
	switch level {
	case pilotage.LevelFull:
		return &pilotage.Trace{Level: pilotage.LevelFull, Steps: steps}
	case pilotage.LevelSummary:
		out := make([]pilotage.TraceStep, len(steps))
		for i, s := range steps {
			s.Input = nil
			s.Output = truncateOutput(s.Output)
			out[i] = s
		}
		return &pilotage.Trace{Level: pilotage.LevelSummary, Steps: out}
	}
	return nil
}

func truncateOutput(v any) any {
	if v == nil || !core.Measure(v, TruncateOver, false).Over(TruncateOver) {
		return v // the measure is never below the compact encoding's length
	}
	var full int
	var preview string
	if core.Measure(v, encodeWhole, false).Over(encodeWhole) {
		// A huge value (64 states of 200 KB a selector read) is measured
		// by walking it and previewed from a cut copy: encoding it whole
		// on every firing took gigabytes at 20 firings a second.
		full = core.Measure(v, math.MaxInt, false).Bytes
		b, _ := MarshalCompact(previewCopy(v, 0))
		preview = string(b)
	} else {
		b, err := MarshalCompact(v)
		if err != nil {
			b, _ = MarshalCompact(jsonSafe(v))
		}
		if len(b) <= TruncateOver {
			return v
		}
		full, preview = len(b), string(b)
	}
	if utf8.RuneCountInString(preview) > TruncatePreview {
		n := 0
		for i := range preview {
			if n == TruncatePreview {
				preview = preview[:i]
				break
			}
			n++
		}
	}
	return map[string]any{"truncated": true, "bytes": full, "preview": preview}
}

// encodeWhole is the size past which a value is not encoded whole for its
// preview; its bytes are then counted as json.Marshal counts them (HTML
// characters escaped).
const encodeWhole = 64 << 10

// previewCopy is v cut to what its preview can show: strings to
// 4*TruncatePreview bytes (at least TruncatePreview characters), lists and
// objects to their first TruncatePreview members (objects in key order, as
// JSON writes them), so its encoding begins as v's does.
func previewCopy(v any, depth int) any {
	if depth > core.MaxMeasureDepth {
		return nil
	}
	switch x := v.(type) {
	case string:
		return cutForPreview(x)
	case []any:
		out := make([]any, min(len(x), TruncatePreview))
		for i := range out {
			out[i] = previewCopy(x[i], depth+1)
		}
		return out
	case map[string]any:
		keys := core.SortedKeys(x)
		out := make(map[string]any, min(len(keys), TruncatePreview))
		for _, k := range keys[:min(len(keys), TruncatePreview)] {
			out[cutForPreview(k)] = previewCopy(x[k], depth+1)
		}
		return out
	}
	return v
}

// cutForPreview is s cut to 4*TruncatePreview bytes at a whole character.
func cutForPreview(s string) string {
	n := 4 * TruncatePreview
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MarshalCompact encodes v without HTML escaping (the byte counts and
// previews of truncated outputs are measured on this form).
func MarshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

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
	if plan == nil {
		return errors.New("no plan")
	}
	sc, errs := scanTrace(tr)
	expected := map[string]bool{}
	for _, s := range plan.Steps {
		switch {
		case s.Arm != nil:
			if sc.selected[s.Arm.Branch][s.Arm.Label] {
				expected[s.ID] = true
			} else if sc.present[s.ID] {
				errs = append(errs, fmt.Sprintf("step %q of unselected arm %s:%s is in the trace", s.ID, s.Arm.Branch, s.Arm.Label))
			}
		case s.Loop != "":
			expected[s.ID] = sc.continues[s.Loop] > 0
		default:
			expected[s.ID] = true
		}
	}
	if outcome.Status == core.StatusSuccess || outcome.Status == core.StatusAssumed {
		for _, s := range plan.Steps {
			if expected[s.ID] && !sc.present[s.ID] {
				errs = append(errs, fmt.Sprintf("expected step %q is missing from a successful trace", s.ID))
			}
		}
	} else {
		for _, e := range sc.unprefixed {
			if !expected[BaseStepID(e.ID)] {
				errs = append(errs, fmt.Sprintf("trace entry %q is not in the expected set", e.ID))
			}
		}
	}
	errs = append(errs, checkCalls(plan, sc.unprefixed)...)
	if len(errs) > 0 {
		return fmt.Errorf("trace does not correspond to plan: %s", strings.Join(errs, "; "))
	}
	return nil
}

// traceScan is what correspondence needs from a trace's unprefixed entries.
type traceScan struct {
	unprefixed []pilotage.TraceStep
	selected   map[string]map[string]bool // branch base id → labels taken
	continues  map[string]int             // loop base id → "continue" decisions
	present    map[string]bool            // base ids
}

func scanTrace(tr []pilotage.TraceStep) (traceScan, []string) {
	sc := traceScan{selected: map[string]map[string]bool{}, continues: map[string]int{}, present: map[string]bool{}}
	var errs []string
	seen := map[string]bool{}
	for _, e := range tr {
		if seen[e.ID] {
			errs = append(errs, fmt.Sprintf("trace id %q appears more than once", e.ID))
		}
		seen[e.ID] = true
		if strings.Contains(e.ID, "/") {
			continue
		}
		sc.unprefixed = append(sc.unprefixed, e)
		base := BaseStepID(e.ID)
		sc.present[base] = true
		for _, d := range e.Decisions {
			if sc.selected[base] == nil {
				sc.selected[base] = map[string]bool{}
			}
			sc.selected[base][d.Took] = true
			if d.Took == TookContinue {
				sc.continues[base]++
			}
		}
	}
	return sc, errs
}

// checkCalls: an entry may only call what its plan step lists (the Engine
// must not execute an operation that was not part of the validated program).
func checkCalls(plan *pilotage.Plan, entries []pilotage.TraceStep) []string {
	byID := map[string]*pilotage.PlanStep{}
	for i := range plan.Steps {
		byID[plan.Steps[i].ID] = &plan.Steps[i]
	}
	var errs []string
	for _, e := range entries {
		ps := byID[BaseStepID(e.ID)]
		for _, c := range e.Calls {
			if ps == nil || !traceHasString(ps.Calls, c) {
				errs = append(errs, fmt.Sprintf("trace entry %q calls %q, which its plan step does not list", e.ID, c))
			}
		}
	}
	return errs
}

func traceHasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TriggerReason says why trigger t fired, for its trace entry.
func TriggerReason(t *model.RunTrigger, fire model.TriggerFire) string {
	switch t.Kind() {
	case model.TriggerState, model.TriggerNumeric:
		return fmt.Sprintf("%s changed to %s", t.EntityID, FormatReason(fire.Value))
	case model.TriggerEvent:
		return fmt.Sprintf("event %s arrived with %s", t.EntityID, FormatReason(fire.Value))
	case model.TriggerCron:
		return "the cron schedule " + t.Spec() + " matched"
	case model.TriggerTime:
		return "it was " + t.Spec()
	case model.TriggerSun:
		sun, offset := t.Sun()
		return "it was " + clock.SunPhrase(sun, offset)
	case model.TriggerAvailable:
		return t.EntityID + "'s device " + core.AvailablePhrase(fire.Value)
	}
	return "trigger " + t.TriggerID + " fired"
}

// FormatReason renders a value inside a decision's because: JSON when it
// can be encoded, otherwise Go's %v.
func FormatReason(v any) string {
	b, err := MarshalCompact(jsonSafe(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// BaseStepID recovers the program step id of a trace entry id (spec
// §5.8.2): the segment after the final "/", without its "#n" suffixes.
func BaseStepID(traceID string) string {
	if i := strings.LastIndexByte(traceID, '/'); i >= 0 {
		traceID = traceID[i+1:]
	}
	if i := strings.IndexByte(traceID, '#'); i >= 0 {
		traceID = traceID[:i]
	}
	return traceID
}
