package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/engine"
	cut "github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
)

var pageNames = []string{"rules", "rule", "runs", "run", "devices", "device", "confirm", "login", "error", "approvals", "approval", "editor", "diff", "logbook", "helpers", "guides", "health"}

func parsePages(c clock) map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, n := range pageNames {
		out[n] = template.Must(template.New(n).Funcs(funcs).Funcs(c.funcs()).ParseFS(templateFS, "templates/layout.html", "templates/history.html", "templates/parts*.html", "templates/"+n+".html"))
	}
	return out
}

var funcs = template.FuncMap{
	"riskClass":   riskClass,
	"statusClass": statusClass,
	"pretty":      prettyJSON,
	"ms":          formatMS,
	"stepSegs":    stepSegments,
	"join":        strings.Join,
	"statusText":  statusText,
	"outcomeText": func(o pilotage.Outcome) string { return engine.OutcomeSentence(o) },
	"deref":       func(b *bool) bool { return b != nil && *b },
	"refRule":     refRule,
	"list":        func(v ...string) []string { return v },
	"controlOf":   func(ref string) string { return strings.TrimPrefix(refRule(ref), "control.") },
}

// refRule is the rule name inside a program ref
// ("automation.hall-light@1a2b" → "hall-light"), or "".
func refRule(ref string) string {
	name, ok := strings.CutPrefix(ref, "automation.")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "@")
	return name
}

// riskClass is the CSS class of a risk badge; unknown risks look like the
// worst (fail closed, as the engine does). It takes a pilotage.Risk or a
// string (stored programs keep risk as text).
func riskClass(v any) string {
	r := pilotage.Risk(fmt.Sprint(v))
	switch r {
	case pilotage.RiskRead, pilotage.RiskControl, pilotage.RiskSecurity, pilotage.RiskExternal:
		return "risk-" + string(r)
	case "":
		return "risk-none"
	}
	return "risk-security"
}

// statusClass colours an outcome: ok, failed, or neutral for the ok
// statuses that did nothing (conditions not met, skipped).
func statusClass(status string, ok bool) string {
	switch {
	case status == "running": // not over yet: neither failed nor done
		return "st-run"
	case !ok:
		return "st-bad"
	case status == "conditions_not_met" || status == "skipped" || status == "throttled" || status == "not_met" ||
		status == "not_triggered" || status == "assumed":
		return "st-idle"
	case status == "enabled":
		return "st-ok"
	case status == "disabled":
		return "st-idle"
	case status == "broken":
		return "st-bad"
	}
	return "st-ok"
}

// statusText is a status for humans: "conditions_not_met" → "conditions not met".
func statusText(s string) string { return strings.ReplaceAll(s, "_", " ") }

func prettyJSON(v any) string {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		raw = b
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

func formatMS(v *float64) string {
	if v == nil {
		return ""
	}
	if *v < 10 {
		return strconv.FormatFloat(*v, 'f', 2, 64) + " ms"
	}
	if *v < 10000 {
		return strconv.FormatFloat(*v, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(*v/1000, 'f', 1, 64) + " s"
}

// stepSegment is one level of a flat trace step id: "call#1/inner#3" is
// call (iteration/expansion 1) › inner (3).
type stepSegment struct {
	Name string
	Iter string
}

func stepSegments(id string) []stepSegment {
	parts := strings.Split(id, "/")
	out := make([]stepSegment, 0, len(parts))
	for _, p := range parts {
		name, iter, _ := strings.Cut(p, "#")
		out = append(out, stepSegment{Name: name, Iter: iter})
	}
	return out
}

// triggerSummary describes a rule's triggers in one line, from the
// program's trigger objects (they carry to/from/for, which the armed
// trigger info does not), falling back to the armed info.
func triggerSummary(ri engine.RuleInfo) string {
	var prog struct {
		Triggers []map[string]any `json:"triggers"`
	}
	_ = json.Unmarshal(ri.Program, &prog)
	var parts []string
	for _, t := range prog.Triggers {
		parts = append(parts, describeTrigger(t))
	}
	if len(parts) == 0 {
		for _, t := range ri.Triggers {
			parts = append(parts, strings.TrimSpace(t.Kind+" "+t.Entity+" "+t.Spec))
		}
	}
	if len(parts) == 0 && ri.Program == nil {
		return "— (its program could not be loaded)"
	}
	if len(parts) == 0 {
		return "no triggers (called only)"
	}
	return strings.Join(parts, "; ")
}

// describeTrigger renders one trigger object generically: its source
// member first, then its qualifiers in a fixed order.
func describeTrigger(t map[string]any) string {
	var b strings.Builder
	for _, src := range []struct{ key, prefix string }{{"state", ""}, {"event", "event "}, {"cron", "cron "}, {"at", "at "}, {"sun", ""}} {
		if v, ok := t[src.key]; ok {
			b.WriteString(src.prefix + fmt.Sprint(v))
			break
		}
	}
	for _, k := range []string{"from", "to", "above", "below", "for", "offset"} {
		if v, ok := t[k]; ok {
			b.WriteString(" " + k + " " + compactJSON(v))
		}
	}
	if b.Len() == 0 {
		keys := make([]string, 0, len(t))
		for k := range t {
			if k != "id" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		b.WriteString(strings.Join(keys, ", "))
	}
	return b.String()
}

// maxLiveShown bounds a live value on a page or in a live update: a
// sensor's 200 KB string on every row made pages of megabytes, each held
// whole by its request; the full value stays in the history API and MCP.
const maxLiveShown = 1 << 10

// liveShown is a live value as pages and live updates show it: compact
// JSON cut at a whole character to maxLiveShown, saying so and the full size.
func liveShown(v any) string {
	s, _ := cut.Cut(compactJSON(v), maxLiveShown)
	return s
}

func compactJSON(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
