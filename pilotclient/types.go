package pilotclient

import (
	"encoding/json"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Capabilities is an effective capability map: capability → declared
// sub-features ("" key = the capability itself).
type Capabilities map[string]map[string]bool

// Has reports whether "cap" or "cap.sub" is declared (spec §4.2: a
// sub-feature is declared only when its parent is and its value is true).
func (c Capabilities) Has(name string) bool {
	capName, sub, hasSub := strings.Cut(name, ".")
	m, ok := c[capName]
	if !ok {
		return false
	}
	if !hasSub {
		return true
	}
	return m[sub]
}

// effective computes a Language's effective map: per capability, the
// Language-level value replaces the Server-level one in full (spec §4.2).
func effective(server, lang map[string]any) Capabilities {
	out := Capabilities{}
	add := func(k string, v any) {
		switch x := v.(type) {
		case bool:
			if x {
				out[k] = map[string]bool{}
			} else {
				delete(out, k)
			}
		case map[string]any:
			m := map[string]bool{}
			for s, sv := range x {
				if b, ok := sv.(bool); ok && b {
					m[s] = true
				}
			}
			out[k] = m
		default:
			delete(out, k) // null or an unrecognized shape declares nothing (conservative)
		}
	}
	for k, v := range server {
		if _, ok := lang[k]; !ok {
			add(k, v)
		}
	}
	for k, v := range lang {
		add(k, v)
	}
	return out
}

// GetResult is lookup get's answer.
type GetResult struct {
	Entry *pilotage.Entry `json:"entry"`
	// RawEntry is the entry as sent, for fail-closed risk checks.
	RawEntry       json.RawMessage `json:"-"`
	Live           json.RawMessage `json:"live,omitempty"`
	CatalogVersion string          `json:"catalog_version"`
}

// ListResult is one page of a catalog list.
type ListResult struct {
	Items          []*pilotage.Entry `json:"items"`
	NextCursor     string            `json:"next_cursor,omitempty"`
	CatalogVersion string            `json:"catalog_version"`
}

// Plan is a validation plan. MaxRiskHints stays raw so that missing or
// malformed risk information can be treated as risky (spec §7.3 fail closed).
type Plan struct {
	Steps        []pilotage.PlanStep `json:"steps"`
	MaxRisk      pilotage.Risk       `json:"max_risk"`
	MaxRiskHints json.RawMessage     `json:"max_risk_hints"`
	Summary      string              `json:"summary,omitempty"`
}

// ValidateResult is validate's answer.
type ValidateResult struct {
	Valid          bool                  `json:"valid"`
	Diagnostics    []pilotage.Diagnostic `json:"diagnostics"`
	CatalogVersion string                `json:"catalog_version"`
	Plan           *Plan                 `json:"plan,omitempty"`
}

// Errors returns the error-severity diagnostics (the ones that block
// execution, spec §7.2). An unknown severity counts as an error.
func (v *ValidateResult) Errors() []pilotage.Diagnostic {
	var out []pilotage.Diagnostic
	for _, d := range v.Diagnostics {
		if d.Severity != pilotage.SeverityWarning && d.Severity != pilotage.SeverityInfo {
			out = append(out, d)
		}
	}
	return out
}

// ExecuteRequest is one execute request.
type ExecuteRequest struct {
	// Program (inline) or ProgramRef (a promoted program): exactly one.
	Program                json.RawMessage
	ProgramRef             string
	Input                  map[string]any
	TraceLevel             string
	Store                  *bool
	ExpectedCatalogVersion string
	IdempotencyKey         string
	TestRun                bool
}

// ExecuteResult is execute's answer.
type ExecuteResult struct {
	RunID          string                `json:"run_id"`
	Outcome        pilotage.Outcome      `json:"outcome"`
	Output         json.RawMessage       `json:"output,omitempty"`
	Trace          *pilotage.Trace       `json:"trace,omitempty"`
	Diagnostics    []pilotage.Diagnostic `json:"diagnostics,omitempty"`
	CatalogVersion string                `json:"catalog_version,omitempty"`
	// Approval is the server's risk-gate request (approval_pending) or
	// the approval a deploy used.
	Approval *pilotage.Approval `json:"approval,omitempty"`
	// Replaces is the installed rule a deploy refused to replace
	// (rule_exists): what replacing it would undo.
	Replaces *pilotage.Replaces `json:"replaces,omitempty"`
}

// Deploy decodes the output of a successful deploy.
func (r *ExecuteResult) Deploy() (*pilotage.DeployOutput, bool) {
	var d pilotage.DeployOutput
	if !r.Outcome.OK || len(r.Output) == 0 || json.Unmarshal(r.Output, &d) != nil || d.ProgramRef == "" {
		return nil, false
	}
	return &d, true
}

// UnmarshalJSON keeps the raw entry beside the decoded one.
func (g *GetResult) UnmarshalJSON(b []byte) error {
	type plain GetResult
	var aux struct {
		plain
		Raw json.RawMessage `json:"entry"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*g = GetResult(aux.plain)
	g.RawEntry = aux.Raw
	if len(aux.Raw) > 0 && string(aux.Raw) != "null" {
		g.Entry = &pilotage.Entry{}
		if err := json.Unmarshal(aux.Raw, g.Entry); err != nil {
			return err
		}
	}
	return nil
}
