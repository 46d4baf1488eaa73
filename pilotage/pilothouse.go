package pilotage

import (
	"encoding/json"
	"time"
)

// Pilothouse's own records on the same wire, outside the spec: the output
// of a deploy and the rule-management tools' answers.

// Pilothouse's rule-management tools.
const (
	ToolRules       = "pilothouse_rules"
	ToolRuleEnable  = "pilothouse_rule_enable"
	ToolRuleDisable = "pilothouse_rule_disable"
	ToolRuleRemove  = "pilothouse_rule_remove"
	// ToolHelpers lists the household's helpers (flags, numbers, timers…)
	// and lets the owner create, update and delete them.
	ToolHelpers = "pilothouse_helpers"
)

// DeployOutput is the output of a successful installation Run.
type DeployOutput struct {
	ProgramRef string `json:"program_ref"`
	Rule       string `json:"rule"`
	Replaced   bool   `json:"replaced"`
	// Unchanged: the installed rule already ran this program with this
	// input; nothing was replaced and no run in progress was cancelled.
	Unchanged bool          `json:"unchanged,omitempty"`
	Triggers  []TriggerInfo `json:"triggers"`
	NextFire  *time.Time    `json:"next_fire,omitempty"` // local, with its UTC offset
	TimeZone  string        `json:"time_zone"`           // the server's: schedules and next_fire are in it
	// Plan is the installed rule's plan when its params were bound
	// (catalog references, or thresholds, holds, times and offsets
	// written as params): the real ids, values and risk (the program's
	// own plan shows the worst its constraints admit).
	Plan *Plan `json:"plan,omitempty"`
	// Warnings of the program as bound (overlapping_rule).
	Warnings []Diagnostic `json:"warnings,omitempty"`
}

// TriggerInfo describes an armed trigger.
type TriggerInfo struct {
	ID       string     `json:"id"`
	Kind     string     `json:"kind"`
	Entity   string     `json:"entity,omitempty"`
	Spec     string     `json:"spec,omitempty"`
	NextFire *time.Time `json:"next_fire,omitempty"` // local, with its UTC offset
	// Held: NextFire is the end of an open "for" window, when the trigger
	// fires if its state holds until then.
	Held bool `json:"held,omitempty"`
	// TimeZone is the zone a schedule or sun trigger's times are in.
	TimeZone string `json:"time_zone,omitempty"`
	// Note says what the trigger does not do as written (a selector
	// addressing more states than a trigger watches).
	Note string `json:"note,omitempty"`
}

// RuleInfo is one installed rule as pilothouse_rules lists it.
type RuleInfo struct {
	Name        string        `json:"name"`
	Status      string        `json:"status"` // enabled, disabled, broken
	Broken      string        `json:"broken,omitempty"`
	ProgramRef  string        `json:"program_ref"`
	Description string        `json:"description,omitempty"`
	MaxRisk     Risk          `json:"max_risk"`
	Triggers    []TriggerInfo `json:"triggers"`
	NextFire    *time.Time    `json:"next_fire,omitempty"`
	// NextFireHeld: NextFire is an open "for" window's end (it fires then
	// if the state holds).
	NextFireHeld bool            `json:"next_fire_held,omitempty"`
	LastFirings  []FiringInfo    `json:"last_firings"`
	InstalledAt  time.Time       `json:"installed_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
	Principal    string          `json:"principal"`
	Params       json.RawMessage `json:"params,omitempty"`
	// Missing lists the catalog entries the rule references that are not
	// in the catalog now (a device removed, renamed, or not announced yet
	// since a restart): until they are back, the rule cannot fire, or
	// its firings end broken.
	Missing []string `json:"missing,omitempty"`
	// CancelledRuns counts the rule's runs in progress that this disable
	// cancelled: the steps they had not reached (such as turning a light
	// back off) will not run. Note says so in words.
	CancelledRuns int    `json:"cancelled_runs,omitempty"`
	Note          string `json:"note,omitempty"`
	// Approval is the human approval the installed deploy used, when its
	// risk needed one.
	Approval *Approval `json:"approval,omitempty"`
}

// Approval is Pilothouse's record of a risky deploy that needs (or got) a
// human's approval outside the model (spec §7.3): an execute answered
// approval_pending carries it, and so do the approvals API and a rule
// installed with one.
type Approval struct {
	ID        string     `json:"id"`
	Status    string     `json:"status"` // pending, approved, declined, used, expired
	URL       string     `json:"url,omitempty"`
	ExpiresAt time.Time  `json:"expires_at"`
	Rule      string     `json:"rule"`
	Principal string     `json:"principal"`
	Ref       string     `json:"program_ref"`
	Risk      Risk       `json:"risk"`
	Reasons   []string   `json:"reasons,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Channel   string     `json:"channel,omitempty"`
	UsedRun   string     `json:"used_run,omitempty"`
	// SelfApproved: it was decided by the principal that requested it
	// (the gate separated no one).
	SelfApproved bool `json:"self_approved,omitempty"`
	// Next says in one sentence what the caller does now.
	Next string `json:"next,omitempty"`
}

// Replaces names the installed rule a deploy would replace: an execute
// answered rule_exists carries it, so the caller learns before anything
// changes what replacing it would undo.
type Replaces struct {
	Rule       string          `json:"rule"`
	ProgramRef string          `json:"program_ref"`
	Principal  string          `json:"principal"`
	Input      json.RawMessage `json:"input"`
	Enabled    bool            `json:"enabled"`
	// RunsInProgress are the rule's runs that replacing it now cancels.
	RunsInProgress int `json:"runs_in_progress"`
}

// FiringInfo is one recent run of a rule.
type FiringInfo struct {
	RunID   string    `json:"run_id"`
	Status  string    `json:"status"`
	OK      bool      `json:"ok"`
	Started time.Time `json:"started"`
}
