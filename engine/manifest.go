package engine

import (
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Tool names of the binding (shared/design/pilotage-binding.md).
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

// Manifest is the Server's Pilotage self-description (spec §5.1).
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

// LanguageEntry is one item of manifest.languages.
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

// Version of the server binary (set by cmd at build time if desired).
var Version = "0.1.0"

// Manifest returns the manifest. It is the same for every principal: scope
// changes what a caller sees in the catalog, not what the Language can do.
func (e *Engine) Manifest() *Manifest {
	caps := map[string]any{
		"guides":   map[string]bool{"topic_fetch": true},
		"catalog":  map[string]bool{"search": true, "changed_since": true},
		"validate": true,
		"plan":     true,
	}
	loop := map[string]string{"validate": ToolValidate}
	lang := LanguageEntry{
		ID:          rules.Language,
		Title:       "Home automation rules over live MQTT devices",
		Description: "Programs are JSON rules (triggers, conditions, steps) naming live Zigbee2MQTT / Home Assistant MQTT devices; execute installs them as rules (deploy) or simulates them (test_run).",
		Guides:      map[string]string{"tool": ToolLearn, "resources": GuidesURIPrefix + rules.Language + "/"},
		Catalog:     map[string]string{"tool": ToolLookup},
		Locator:     "json-pointer",
	}
	if e.store != nil {
		caps["execute"] = map[string]bool{"test_run": true, "idempotency": true}
		caps["trace_fetch"] = map[string]bool{"narrate": true}
		loop["execute"] = ToolExecute
		loop["trace"] = ToolTrace
		lang.ExecutionMode = "deploy"
		lang.TraceLevel = pilotage.LevelFull
		lang.Retention = e.cfg.RetentionText()
		lang.TraceSubprogram = "expanded"
		lang.PromotionAuthority = "caller"
	}
	lang.Environment = e.Environment()
	lang.Capabilities = caps
	lang.Loop = loop
	return &Manifest{
		Pilotage:  pilotage.Version,
		Server:    &ServerInfo{Name: "pilothouse", Version: Version},
		Languages: []LanguageEntry{lang},
	}
}
