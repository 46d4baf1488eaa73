// Package pilotage holds the wire records of Pilotage 1.1 (spec Part II,
// field tables fixed in shared/design/pilotage-binding.md) that several
// packages share: catalog entries, risk, diagnostics, plans, outcomes,
// traces, the manifest, and Pilothouse's own records on the same wire
// (deploy output, rule listings). It is a leaf: it imports nothing from
// this module, so devices, rules, storage, engine and the client
// (pilotclient) all speak the same types without cycles.
package pilotage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Version is the Pilotage extension version on the wire (spec §11.1).
const Version = "1.1"

// RiskHints are the three booleans every risk carries (spec §5.3).
type RiskHints struct {
	ReadOnly    bool `json:"readOnly"`
	Destructive bool `json:"destructive"`
	OpenWorld   bool `json:"openWorld"`
}

// Risk is the engine-defined risk level (closed set: RiskLevels).
type Risk string

// The closed set of risk levels.
const (
	RiskRead     Risk = "read"
	RiskControl  Risk = "control"
	RiskSecurity Risk = "security"
	RiskExternal Risk = "external"
)

// RiskLevel is one row of the closed risk table.
type RiskLevel struct {
	Risk    Risk
	Hints   RiskHints
	Typical string
}

// RiskLevels is the one table of risk levels; the closed-sets guide is
// generated from it, and RiskOf/HintsOf read it.
var RiskLevels = []RiskLevel{
	{RiskRead, RiskHints{ReadOnly: true}, "states, events, triggers, conditions, pure steps"},
	{RiskControl, RiskHints{}, "lights, plugs, media, thermostats and radiator valves (any setpoint the device accepts), reversible local changes"},
	{RiskSecurity, RiskHints{Destructive: true}, "locks, alarm panels, garage doors and other covers, water valves, sirens"},
	{RiskExternal, RiskHints{OpenWorld: true}, "notifications and anything that leaves the house"},
}

// HintsOf returns the hints a risk level implies.
func HintsOf(r Risk) RiskHints {
	for _, l := range RiskLevels {
		if l.Risk == r {
			return l.Hints
		}
	}
	// Unknown: fail closed (spec §7.3).
	return RiskHints{Destructive: true, OpenWorld: true}
}

// RiskOf names the level consistent with a set of hints. Destructive wins
// over openWorld (a lock is worse than a message); a combination of both is
// still labelled security while its hints keep openWorld.
func RiskOf(h RiskHints) Risk {
	switch {
	case h.Destructive:
		return RiskSecurity
	case h.OpenWorld:
		return RiskExternal
	case !h.ReadOnly:
		return RiskControl
	default:
		return RiskRead
	}
}

// Aggregate computes the maximum of several hints (spec §5.3): readOnly is
// the AND, destructive and openWorld the OR. The aggregate of nothing is
// read-only.
func Aggregate(hs ...RiskHints) RiskHints {
	out := RiskHints{ReadOnly: true}
	for _, h := range hs {
		out.ReadOnly = out.ReadOnly && h.ReadOnly
		out.Destructive = out.Destructive || h.Destructive
		out.OpenWorld = out.OpenWorld || h.OpenWorld
	}
	return out
}

// DeviceType is one row of the device types table: a device entry's
// type:<Type> tag, the risk of its actions, and how the catalog recognises
// such a device: what it exposes (Means), or one of Words in its
// description.
type DeviceType struct {
	Type  string
	Risk  Risk
	Means string
	Words []string
}

// DeviceTypes is the one table of device types and the risk of what they
// do: the catalog types devices and risks their actions from it, and the
// closed-sets guide is generated from it. Rows are tried in order; the
// first that matches types the device.
var DeviceTypes = []DeviceType{
	{"lock", RiskSecurity, "a lock expose: door locks", []string{"door lock", "smart lock", "digital lock", "gas lock"}},
	{"cover", RiskSecurity, "a cover expose: blinds, shutters, curtains, gates, garage doors driven as covers", nil},
	{"garage_door", RiskSecurity, "a garage_door_contact expose: garage door openers (their trigger)", []string{"garage door opener"}},
	{"siren", RiskSecurity, "a warning expose or a settable alarm: sirens, warning devices", []string{"siren"}},
	{"alarm_panel", RiskSecurity, "a settable arm_mode: security keypads", nil},
	{"climate", RiskControl, "a climate expose: thermostats and radiator valves (TRVs)", nil},
	{"valve", RiskSecurity, "water and gas valves and water timers, by their description (a climate expose, tried first, makes a radiator valve climate)",
		[]string{"valve", "water timer", "watering timer", "sprinkler", "irrigation", "shut-off", "shutoff"}},
	{"light", RiskControl, "a light expose", nil},
	{"switch", RiskControl, "a switch expose: plugs, relays, wall switches", nil},
	{"fan", RiskControl, "a fan expose", nil},
	{"remote", RiskControl, "an action event and at most one settable property: remotes, buttons", nil},
	{"binary_sensor", RiskControl, "a binary expose: contact, motion, leak sensors", nil},
	{"sensor", RiskControl, "anything else", nil},
}

// DeviceTypeRisk is the risk of the actions of a device of type t; an
// unknown type is control.
func DeviceTypeRisk(t string) Risk {
	for _, d := range DeviceTypes {
		if d.Type == t {
			return d.Risk
		}
	}
	return RiskControl
}

// Kind is a catalog entry kind (closed set: Kinds).
type Kind string

// The closed set of catalog entry kinds.
const (
	KindDevice     Kind = "device"
	KindState      Kind = "state"
	KindEvent      Kind = "event"
	KindAction     Kind = "action"
	KindAutomation Kind = "automation"
)

// KindInfo is one row of the closed kinds table.
type KindInfo struct {
	Kind     Kind
	Callable bool
	What     string
}

// Kinds is the one table of entry kinds.
var Kinds = []KindInfo{
	{KindDevice, false, "one physical or virtual device (Zigbee2MQTT, Home Assistant MQTT discovery, the demo simulator)"},
	{KindState, false, "one readable property of a device, e.g. hall_motion.occupancy; output_schema describes its value"},
	{KindEvent, false, "one momentary event source, e.g. bedroom_remote.action (button presses)"},
	{KindAction, true, "one thing a device or channel can be told to do, e.g. hall_light.set; input_schema from what is settable"},
	{KindAutomation, true, "a promoted program (an installed rule body or reusable script); input_schema = its params"},
}

// KindCallable reports whether entries of kind k can be called.
func KindCallable(k Kind) bool {
	for _, ki := range Kinds {
		if ki.Kind == k {
			return ki.Callable
		}
	}
	return false
}

// Entry is one catalog entry (spec §5.4). Live values never live here.
type Entry struct {
	ID           string          `json:"id"`
	Kind         Kind            `json:"kind"`
	Name         string          `json:"name,omitempty"`
	Description  string          `json:"description,omitempty"`
	Tags         []string        `json:"tags,omitempty"`
	Callable     bool            `json:"callable"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Risk         Risk            `json:"risk"`
	RiskHints    RiskHints       `json:"risk_hints"`
	Languages    []string        `json:"languages,omitempty"`
	Revision     string          `json:"revision,omitempty"`
}

// Live is an entry's live value, served beside the entry (lookup get),
// never part of it: a state's value, or a device's state object and
// availability.
type Live struct {
	Value     any       `json:"value,omitempty"`
	Available *bool     `json:"available,omitempty"`
	LastSeen  time.Time `json:"last_seen,omitempty"`
	// LastChanged is when the value last changed (a state) or last
	// occurred (an event), as far as this process saw.
	LastChanged time.Time `json:"last_changed,omitzero"`
	Unsupported string    `json:"unsupported,omitempty"`
	// Unread says why the latest message for the entry could not be read
	// (a template over its budget, say); Value is the one before it.
	Unread string `json:"unread,omitempty"`
	// FirstValue: the value is the first this process saw of the entry,
	// so LastChanged is when it arrived, not necessarily when it changed
	// (see devices' RestoreChanged).
	FirstValue bool `json:"-"`
	// Retained: the value came with the retain flag, the broker's stored
	// copy sent as the catalog subscribed, not a report of now.
	Retained bool `json:"-"`
}

// ContentHash identifies an entry's defined fields except Revision: two
// entries have equal hashes iff catalog_version must not tell them apart
// (spec §5.4). Producers use it as the Revision, and catalog versions and
// changed_since are computed from it.
func (e *Entry) ContentHash() string {
	c := *e
	c.Revision = ""
	b, _ := json.Marshal(&c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// Position is a 1-based line/column inside a string value.
type Position struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Range locates a finding inside a string value.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Severity of a diagnostic.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Diagnostic is one validation finding (spec §5.5).
type Diagnostic struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Path     string   `json:"path"`
	Range    *Range   `json:"range,omitempty"`
	Hint     string   `json:"hint,omitempty"`
}

// Arm marks a plan step that belongs to one arm of a branch.
type Arm struct {
	Branch string `json:"branch"`
	Label  string `json:"label"`
}

// PlanStep is one step of a plan (spec §5.6).
type PlanStep struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	Description string    `json:"description,omitempty"`
	Calls       []string  `json:"calls,omitempty"`
	Risk        Risk      `json:"risk"`
	RiskHints   RiskHints `json:"risk_hints"`
	Arm         *Arm      `json:"arm,omitempty"`
	Loop        string    `json:"loop,omitempty"`
	// Selector is a call or trigger by selector as written (Pilothouse's
	// addition): Calls are what it resolves to now, Risk the highest of
	// them; a run resolves it again.
	Selector map[string]string `json:"selector,omitempty"`
}

// Plan is the static preview of what the deployed body does.
type Plan struct {
	Steps        []PlanStep `json:"steps"`
	MaxRisk      Risk       `json:"max_risk"`
	MaxRiskHints RiskHints  `json:"max_risk_hints"`
	Summary      string     `json:"summary,omitempty"`
}

// Outcome classifies a Run or a trace step (spec §5.7).
type Outcome struct {
	OK     bool   `json:"ok"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Decision is one branch or loop decision in a trace step.
type Decision struct {
	At      string `json:"at"`
	Took    string `json:"took"`
	Because string `json:"because"`
}

// TraceStep is one entry of the flat execution log (spec §5.8.2).
type TraceStep struct {
	ID string `json:"id"`
	// Parent is the id of the entry this one ran inside (a branch's arm,
	// a loop's body, a called automation), "" at the top: Pilothouse's
	// addition, so that a reader can draw the path as nested steps.
	Parent    string     `json:"parent,omitempty"`
	Calls     []string   `json:"calls,omitempty"`
	Input     any        `json:"input,omitempty"`
	Output    any        `json:"output,omitempty"`
	Outcome   Outcome    `json:"outcome"`
	TMs       *float64   `json:"t_ms,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
}

// Trace levels.
const (
	LevelNone    = "none"
	LevelSummary = "summary"
	LevelFull    = "full"
)

// Trace is the recorded account of a Run.
type Trace struct {
	Level string         `json:"level"`
	Steps []TraceStep    `json:"steps"`
	Stats map[string]any `json:"stats,omitempty"`
}

// Request error kinds (binding doc, spec §8).
const (
	ErrInvalidRequest    = "invalid_request"
	ErrNotFound          = "not_found"
	ErrUnsupported       = "unsupported"
	ErrConflict          = "conflict"
	ErrUnknownBaseline   = "unknown_baseline"
	ErrResourceExhausted = "resource_exhausted"
)

// RequestError is the request-error channel: a tool result with isError and
// a structured error (binding doc). It is a Go error so that layers can
// return it, and it keeps its kind across wrapping.
type RequestError struct {
	Kind           string `json:"kind"`
	Message        string `json:"message"`
	CatalogVersion string `json:"catalog_version,omitempty"`
}

func (e *RequestError) Error() string { return e.Kind + ": " + e.Message }

// Errorf builds a RequestError.
func Errorf(kind, msg string) *RequestError { return &RequestError{Kind: kind, Message: msg} }
