package pilotage

import "encoding/json"

// Tool names and resource URIs of the MCP binding
// (shared/design/pilotage-binding.md): the server registers them, a
// client calls them.
const (
	ToolDiscover = "pilotage_discover"
	ToolLearn    = "pilotage_learn"
	ToolLookup   = "pilotage_lookup"
	ToolValidate = "pilotage_validate"
	ToolExecute  = "pilotage_execute"
	ToolTrace    = "pilotage_trace"

	ManifestURI     = "pilotage://manifest"
	GuidesURIPrefix = "pilotage://guides/"
)

// Manifest is a Server's Pilotage self-description (spec §5.1).
// Capability values are true, false, or an object of sub-features.
type Manifest struct {
	Pilotage     string          `json:"pilotage"`
	Server       *ServerInfo     `json:"server,omitempty"`
	Capabilities map[string]any  `json:"capabilities,omitempty"`
	Languages    []LanguageEntry `json:"languages"`
}

// ServerInfo names the server.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// LanguageEntry is one item of manifest.languages: the Language's
// capabilities (replacing the Server-level ones, spec §4.2) and where its
// guides, catalog and loop operations live.
type LanguageEntry struct {
	ID                 string            `json:"id"`
	Title              string            `json:"title,omitempty"`
	Description        string            `json:"description,omitempty"`
	Capabilities       map[string]any    `json:"capabilities"`
	Guides             map[string]string `json:"guides"`
	Catalog            map[string]string `json:"catalog,omitempty"`
	Loop               map[string]string `json:"loop"`
	Locator            string            `json:"locator"`
	ExecutionMode      string            `json:"execution_mode,omitempty"`
	TraceLevel         string            `json:"trace_level,omitempty"`
	Retention          string            `json:"retention,omitempty"`
	TraceSubprogram    string            `json:"trace_subprogram,omitempty"`
	PromotionAuthority string            `json:"promotion_authority,omitempty"`
	// Environment is automation/1's own member: the server's time zone
	// and whether sun triggers and conditions are available.
	Environment *Environment `json:"environment,omitempty"`
}

// Environment is the manifest's account of the server's clock and place:
// what time-of-day schedules, time conditions and sun triggers and
// conditions are read against.
type Environment struct {
	// TimeZone is the IANA zone of schedules, clock times and traces.
	TimeZone string `json:"time_zone"`
	// Now is the server's local time (RFC 3339, with its UTC offset).
	Now string  `json:"now"`
	Sun SunInfo `json:"sun"`
}

// SunInfo says whether sun triggers and conditions are available.
type SunInfo struct {
	Available bool `json:"available"`
	// LocationSource is configured, demo_example or none.
	LocationSource string       `json:"location_source"`
	Location       *GeoLocation `json:"location,omitempty"`
	Note           string       `json:"note"`
	// Sunrise and Sunset of today, local (absent in polar day or night).
	Sunrise string `json:"sunrise,omitempty"`
	Sunset  string `json:"sunset,omitempty"`
}

// GeoLocation is a place on Earth in decimal degrees.
type GeoLocation struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// TraceResponse is the fetch door's answer (spec §6.6): the recorded
// envelope, Output as it was stored.
type TraceResponse struct {
	RunID     string          `json:"run_id"`
	Outcome   Outcome         `json:"outcome"`
	Output    json.RawMessage `json:"output,omitempty"`
	Trace     *Trace          `json:"trace"`
	Narration string          `json:"narration,omitempty"`
}
