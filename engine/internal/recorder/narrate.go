package recorder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/clocktext"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Narrate is a deterministic, fact-based summary of a stored run: it only
// restates the envelope (no model, no guessing), in sentences: `Rule
// "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion"
// fired because …. The run succeeded. It called hall_light.set (step
// "on"). The trace has 3 steps.` Times are in the server's zone.
func Narrate(run storage.Run, env *Envelope, question string, zone *time.Location) string {
	var b strings.Builder
	at := clocktext.Text(run.Started, zone)
	switch {
	case run.Kind == "firing":
		fmt.Fprintf(&b, "Rule %s fired at %s (run %s).", shown.Quote(run.Rule), at, run.ID)
	case run.Kind == "deploy" && run.Rule != "":
		fmt.Fprintf(&b, "An installation of rule %s started at %s (run %s).", shown.Quote(run.Rule), at, run.ID)
	case run.Kind == "deploy":
		fmt.Fprintf(&b, "An installation started at %s (run %s).", at, run.ID)
	case run.Kind == "test":
		fmt.Fprintf(&b, "A test run started at %s (run %s).", at, run.ID)
	default:
		fmt.Fprintf(&b, "Run %s started at %s.", run.ID, at)
	}
	if env.Trace != nil {
		narrateDecisions(&b, env.Trace)
	}
	b.WriteString(" " + rules.OutcomeSentence(env.Outcome.Status, env.Outcome.Error))
	switch {
	case env.Outcome.Status == rules.StatusRunning:
		narrateRunning(&b, env.Trace)
	case env.Trace != nil:
		narrateSteps(&b, env.Trace, run.Kind)
	}
	if question != "" {
		b.WriteString(" (The narration restates recorded facts only; it does not answer free-form questions beyond them.)")
	}
	return b.String()
}

// narrateDecisions says which trigger fired and which conditions failed.
func narrateDecisions(b *strings.Builder, t *pilotage.Trace) {
	for _, s := range t.Steps {
		for _, d := range s.Decisions {
			if d.At != rules.TriggersStepID {
				continue
			}
			fmt.Fprintf(b, " Trigger %s fired", shown.Quote(d.Took))
			if d.Because != "" {
				b.WriteString(" because " + strings.TrimSuffix(d.Because, "."))
			}
			b.WriteString(".")
		}
		if s.Outcome.Status == rules.StepNotMet {
			fmt.Fprintf(b, " Condition %s was not met.", shown.Quote(s.ID))
		}
	}
}

// narrateSteps says what was called (a test run only simulates), which
// steps did not succeed, and how long the trace is.
func narrateSteps(b *strings.Builder, t *pilotage.Trace, kind string) {
	calls := stepCalls(t)
	called, none := "It called ", "It called nothing."
	switch kind {
	case "test":
		called, none = "It would have called ", "It would have called nothing."
	case "deploy":
		none = ""
	}
	switch {
	case len(calls) > 0:
		b.WriteString(" " + called + rules.JoinList(calls, "and") + ".")
	case none != "":
		b.WriteString(" " + none)
	}
	for _, s := range t.Steps {
		if note := callNote(s); note != "" {
			fmt.Fprintf(b, " Step %s: %s.", shown.Quote(s.ID), strings.TrimSuffix(note, "."))
		}
	}
	for _, s := range t.Steps {
		if !s.Outcome.OK {
			b.WriteString(" " + rules.StepSentence(s.ID, s.Outcome.Status, s.Outcome.Error))
		}
	}
	fmt.Fprintf(b, " The trace has %s.", rules.Plural(len(t.Steps), "step", ""))
}

// narrateRunning says what a firing still running has done so far: its
// trace is written when it ends, so until then it has no steps to tell.
func narrateRunning(b *strings.Builder, t *pilotage.Trace) {
	if t == nil || len(t.Steps) == 0 {
		b.WriteString(" Its trace is written when it ends: what it has called so far is not recorded yet (fetch it again later, or look up the devices' states).")
		return
	}
	calls := stepCalls(t)
	if len(calls) > 0 {
		b.WriteString(" So far it called " + rules.JoinList(calls, "and") + ".")
	} else {
		b.WriteString(" So far it called nothing.")
	}
	fmt.Fprintf(b, " The trace has %s so far.", rules.Plural(len(t.Steps), "step", ""))
}

// stepCalls says, step by step, the calls of t that went out:
// `hall_light.set (step "on")`.
func stepCalls(t *pilotage.Trace) []string {
	var calls []string
	for _, s := range t.Steps {
		if ids := sentCalls(s); len(ids) > 0 {
			calls = append(calls, fmt.Sprintf("%s (step %s)", rules.JoinList(ids, "and"), shown.Quote(s.ID)))
		}
	}
	return calls
}

// callNote is the note a call step's published output carries (its
// device was offline), "" for none. Stored outputs are raw JSON: only
// one that names a note is decoded.
func callNote(s pilotage.TraceStep) string {
	if len(s.Calls) == 0 {
		return ""
	}
	var out struct {
		Published bool   `json:"published"`
		Note      string `json:"note"`
	}
	switch x := s.Output.(type) {
	case map[string]any:
		out.Published, _ = x["published"].(bool)
		out.Note, _ = x["note"].(string)
	case json.RawMessage:
		if !bytes.Contains(x, []byte(`"note"`)) || json.Unmarshal(x, &out) != nil {
			return ""
		}
	}
	if !out.Published {
		return ""
	}
	return out.Note
}

// sentCalls are the calls of step s that went out: all of a step that
// succeeded; of a selector step that failed, those its output does not
// give an error for (two of three lights set, the lock refused).
func sentCalls(s pilotage.TraceStep) []string {
	if s.Outcome.OK || len(s.Calls) == 0 {
		return s.Calls
	}
	results := callResults(s.Output)
	var sent []string
	for _, id := range s.Calls {
		r, ok := results[id]
		if m, isMap := r.(map[string]any); ok && (!isMap || m["error"] == nil) {
			sent = append(sent, id)
		}
	}
	return sent
}

// callResults is a selector step's output's "calls" (id to its output or
// {"error": …}): a live trace holds a map, a stored one raw JSON.
func callResults(output any) map[string]any {
	switch x := output.(type) {
	case map[string]any:
		results, _ := x["calls"].(map[string]any)
		return results
	case json.RawMessage:
		var out struct {
			Calls map[string]any `json:"calls"`
		}
		if json.Unmarshal(x, &out) == nil {
			return out.Calls
		}
	}
	return nil
}
