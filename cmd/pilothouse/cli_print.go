package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/pilotclient"
	"github.com/pilothouse/pilothouse/rules"
)

// printValidation prints diagnostics and, when valid, the plan.
func printValidation(w io.Writer, prog json.RawMessage, v *pilotclient.ValidateResult) {
	printDiagnostics(w, prog, v.Diagnostics)
	if !v.Valid || v.Plan == nil {
		return
	}
	p := v.Plan
	if p.Summary != "" {
		fmt.Fprintf(w, "plan: %s\n", p.Summary)
	} else {
		fmt.Fprintln(w, "plan:")
	}
	depth := planDepths(p)
	for _, s := range p.Steps {
		line := fmt.Sprintf("%s%s (%s) risk %s%s", strings.Repeat("  ", depth[s.ID]+1), s.ID, s.Kind, s.Risk, hintWords(s.RiskHints))
		if len(s.Calls) > 0 {
			line += " calls " + strings.Join(s.Calls, ", ")
		}
		if s.Arm != nil && s.Arm.Branch != "triggers" {
			line += fmt.Sprintf(" [%s: %s]", s.Arm.Branch, s.Arm.Label)
		}
		if s.Loop != "" {
			line += fmt.Sprintf(" [loop %s]", s.Loop)
		}
		if s.Description != "" {
			line += " — " + s.Description
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "max_risk: %s; max_risk_hints: %s\n", p.MaxRisk, compact(p.MaxRiskHints))
}

func hintWords(h pilotage.RiskHints) string {
	var w []string
	if h.Destructive {
		w = append(w, "destructive")
	}
	if h.OpenWorld {
		w = append(w, "openWorld")
	}
	if h.ReadOnly {
		w = append(w, "readOnly")
	}
	if len(w) == 0 {
		return ""
	}
	return " (" + strings.Join(w, ", ") + ")"
}

// planDepths gives every plan step its nesting depth: the child of an arm
// or a loop sits one level under that branch or loop.
func planDepths(p *pilotclient.Plan) map[string]int {
	parent := map[string]string{}
	for _, s := range p.Steps {
		switch {
		case s.Arm != nil:
			parent[s.ID] = s.Arm.Branch
		case s.Loop != "":
			parent[s.ID] = s.Loop
		}
	}
	depth := map[string]int{}
	for _, s := range p.Steps {
		d, id := 0, s.ID
		for seen := 0; parent[id] != "" && seen < 64; seen++ {
			id = parent[id]
			d++
		}
		depth[s.ID] = d
	}
	return depth
}

// printDiagnostics prints each diagnostic with its code, path, message,
// hint and the program's JSON at that path.
func printDiagnostics(w io.Writer, prog json.RawMessage, diags []pilotage.Diagnostic) {
	var doc any
	_ = json.Unmarshal(prog, &doc)
	for _, d := range diags {
		path := d.Path
		if path == "" {
			path = "(whole program)"
		}
		fmt.Fprintf(w, "%s %s at %s: %s\n", d.Severity, d.Code, path, d.Message)
		if d.Code == rules.CodeReplacedRule {
			d.Hint = replaceHint // the server's names the MCP input
		}
		if d.Hint != "" {
			fmt.Fprintf(w, "    hint: %s\n", cliHint(d.Hint))
		}
		if d.Code == rules.CodeInputBinding {
			// Its path is in the input, not the program: for a missing
			// param, say how the command line gives one.
			if strings.HasPrefix(d.Message, "params needs") {
				fmt.Fprintf(w, "    the rule's params come from --input, e.g. --input '{%q: …}'\n", inputMember(d.Path))
			}
			continue
		}
		if at, v, ok := resolvePointer(doc, d.Path); ok && d.Path != "" {
			if at != d.Path {
				fmt.Fprintf(w, "    (nearest existing part: %s)\n", cmp.Or(at, "the whole program"))
			}
			for _, line := range excerpt(v) {
				fmt.Fprintf(w, "    | %s\n", line)
			}
		}
	}
}

// inputMember is the first member an input path names ("/level/x":
// "level").
func inputMember(ptr string) string {
	m, _, _ := strings.Cut(strings.TrimPrefix(ptr, "/"), "/")
	return cmp.Or(m, "name")
}

// resolvePointer follows a JSON Pointer as far as it goes, returning the
// deepest existing prefix and its value.
func resolvePointer(doc any, ptr string) (string, any, bool) {
	if doc == nil {
		return "", nil, false
	}
	if ptr == "" {
		return "", doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return "", nil, false
	}
	cur, at := doc, ""
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next any
		found := false
		switch v := cur.(type) {
		case map[string]any:
			next, found = v[tok]
		case []any:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				next, found = v[i], true
			}
		}
		if !found {
			break
		}
		cur = next
		at += "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
	}
	return at, cur, true
}

// excerpt renders a JSON value in at most 12 lines.
func excerpt(v any) []string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 12 {
		lines = append(lines[:11], fmt.Sprintf("… (%d more lines)", len(lines)-11))
	}
	return lines
}

// printGate presents the approval context honestly (spec §7.3).
func printGate(w io.Writer, g *pilotclient.GateRequest) {
	fmt.Fprintln(w, "APPROVAL REQUIRED before deploying:")
	for _, r := range g.Reasons {
		fmt.Fprintf(w, "  - %s\n", r)
	}
	if g.Plan != nil {
		for _, s := range g.Plan.Steps {
			if s.RiskHints.Destructive || s.RiskHints.OpenWorld {
				fmt.Fprintf(w, "  step %s calls %s (risk %s%s)\n", s.ID, strings.Join(s.Calls, ", "), s.Risk, hintWords(s.RiskHints))
			}
		}
	}
	if lines := programLines(g.Program); len(lines) > 0 {
		fmt.Fprintln(w, "  program:")
		for _, l := range lines {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	fmt.Fprintln(w, "Note: the plan, its step descriptions and every risk label above are claims made by the server;")
	fmt.Fprintln(w, "this client has not verified them (Pilotage §7.3). Read the program above before approving.")
}

// programLines is the program itself, indented, at most 40 lines: the
// approval is about what the program does, not only what the server says.
func programLines(prog json.RawMessage) []string {
	var b bytes.Buffer
	if err := json.Indent(&b, prog, "", "  "); err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) > 40 {
		lines = append(lines[:39], fmt.Sprintf("… (%d more lines)", len(lines)-39))
	}
	return lines
}

// printTrace prints a trace as a tree: steps are indented under the branch
// or loop that ran them (from the plan's arm/loop markers when a plan is at
// hand) and under their sub-program call ("call#1/inner#3").
func printTrace(w io.Writer, plan *pilotclient.Plan, t *pilotage.Trace) {
	var depth map[string]int
	if plan != nil {
		depth = planDepths(plan)
	}
	fmt.Fprintf(w, "trace (%s):\n", t.Level)
	for _, s := range t.Steps {
		segs := strings.Split(s.ID, "/")
		d := len(segs) - 1
		for _, seg := range segs {
			base, _, _ := strings.Cut(seg, "#")
			d += depth[base]
		}
		ind := strings.Repeat("  ", d+1)
		line := fmt.Sprintf("%s%s [%s]", ind, s.ID, s.Outcome.Status)
		if len(s.Calls) > 0 {
			line += " call " + strings.Join(s.Calls, ", ")
			if s.Input != nil {
				line += " " + compactAny(s.Input)
			}
		}
		if s.Output != nil {
			line += " → " + compactAny(s.Output)
		}
		if s.Outcome.Error != "" {
			line += " error: " + s.Outcome.Error
		}
		fmt.Fprintln(w, line)
		for _, r := range traceReads(s) {
			fmt.Fprintf(w, "%s  read %s = %s\n", ind, r[0], r[1])
		}
		for _, dec := range s.Decisions {
			fmt.Fprintf(w, "%s  └ took %s because %s\n", ind, dec.Took, dec.Because)
		}
	}
}

// maxTraceReads bounds the values read the trace lists for one step.
const maxTraceReads = 16

// traceReads are the values a condition or branch read, as the run page
// lists them: the input the trace records for an entry whose output is a
// boolean or that took a branch, sorted by what was read; none for
// triggers (their input is the simulation) and calls (shown inline).
func traceReads(s pilotage.TraceStep) [][2]string {
	if s.ID == "triggers" || s.Parent == "triggers" || len(s.Calls) > 0 {
		return nil
	}
	if _, isBool := s.Output.(bool); !isBool && len(s.Decisions) == 0 {
		return nil
	}
	m, ok := s.Input.(map[string]any)
	if !ok {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][2]string, 0, min(len(keys), maxTraceReads))
	for _, k := range keys[:min(len(keys), maxTraceReads)] {
		out = append(out, [2]string{k, clipText(compactAny(m[k]))})
	}
	if len(keys) > maxTraceReads {
		out = append(out, [2]string{"…", fmt.Sprintf("%d more", len(keys)-maxTraceReads)})
	}
	return out
}

// clipText cuts a value read to 120 bytes (on a rune boundary).
func clipText(s string) string {
	if len(s) <= 120 {
		return s
	}
	cut := 120
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// printTestOutput prints a test run's predicted calls and variables.
func printTestOutput(w io.Writer, raw json.RawMessage) {
	var out struct {
		Calls []struct {
			Step  string         `json:"step"`
			ID    string         `json:"id"`
			Args  map[string]any `json:"args"`
			Error string         `json:"error"`
		} `json:"calls"`
		Vars map[string]any `json:"vars"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &out) != nil {
		return
	}
	fmt.Fprintf(w, "would call (%d):\n", len(out.Calls))
	for _, c := range out.Calls {
		line := fmt.Sprintf("  %s %s (step %s)", c.ID, compactAny(c.Args), c.Step)
		if c.Error != "" {
			line += " error: " + c.Error
		}
		fmt.Fprintln(w, line)
	}
	if len(out.Vars) > 0 {
		keys := make([]string, 0, len(out.Vars))
		for k := range out.Vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "vars:")
		for _, k := range keys {
			fmt.Fprintf(w, "  %s = %s\n", k, compactAny(out.Vars[k]))
		}
	}
}

// printRules lists rules, their times in the house's zone loc; offline
// maps the trigger entities whose device says it is offline to it.
func printRules(w io.Writer, list []pilotage.RuleInfo, loc *time.Location, offline map[string]string) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no rules installed")
		return
	}
	for _, r := range list {
		fmt.Fprintf(w, "%s  %s  risk %s  %s\n", r.Name, r.Status, r.MaxRisk, r.ProgramRef)
		if r.Broken != "" {
			fmt.Fprintf(w, "    broken: %s\n", r.Broken)
		}
		if len(r.Missing) > 0 {
			can := "cannot fire"
			if r.Status != "enabled" {
				can = "could not fire if enabled"
			}
			fmt.Fprintf(w, "    %s: not in the catalog: %s\n", can, strings.Join(r.Missing, ", "))
		}
		if r.Description != "" {
			fmt.Fprintf(w, "    %s\n", r.Description)
		}
		for _, t := range r.Triggers {
			fmt.Fprintf(w, "    trigger %s: %s%s\n", t.ID, t.Kind, triggerDetail(t, loc))
			if dev, ok := offline[t.Entity]; ok && t.Entity != "" {
				fmt.Fprintf(w, "      %s is offline: its states fire no trigger and read no value meanwhile\n", dev)
			}
		}
		if r.NextFire != nil {
			held := ""
			if r.NextFireHeld {
				held = " if its state holds until then (a \"for\" window is open)"
			}
			fmt.Fprintf(w, "    next fire: %s%s\n", houseTime(*r.NextFire, loc), held)
		}
		for _, f := range r.LastFirings {
			fmt.Fprintf(w, "    fired %s: %s (run %s)\n", houseTime(f.Started, loc), f.Status, f.RunID)
		}
	}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func compactAny(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
