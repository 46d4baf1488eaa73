package engine

import (
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Version of the server binary (set by cmd at build time if desired).
var Version = "0.1.0"

// Manifest returns the manifest. It is the same for every principal: scope
// changes what a caller sees in the catalog, not what the Language can do.
func (e *Engine) Manifest() *pilotage.Manifest {
	caps := map[string]any{
		"guides":   map[string]bool{"topic_fetch": true},
		"catalog":  map[string]bool{"search": true, "changed_since": true},
		"validate": true,
		"plan":     true,
	}
	loop := map[string]string{"validate": pilotage.ToolValidate}
	lang := pilotage.LanguageEntry{
		ID:          rules.Language,
		Title:       "Home automation rules over live MQTT devices",
		Description: "Programs are JSON rules (triggers, conditions, steps) naming live Zigbee2MQTT / Home Assistant MQTT devices; execute installs them as rules (deploy) or simulates them (test_run).",
		Guides:      map[string]string{"tool": pilotage.ToolLearn, "resources": pilotage.GuidesURIPrefix + rules.Language + "/"},
		Catalog:     map[string]string{"tool": pilotage.ToolLookup},
		Locator:     "json-pointer",
	}
	if e.store != nil {
		caps["execute"] = map[string]bool{"test_run": true, "idempotency": true}
		caps["trace_fetch"] = map[string]bool{"narrate": true}
		loop["execute"] = pilotage.ToolExecute
		loop["trace"] = pilotage.ToolTrace
		lang.ExecutionMode = "deploy"
		lang.TraceLevel = pilotage.LevelFull
		lang.Retention = e.cfg.RetentionText()
		lang.TraceSubprogram = "expanded"
		lang.PromotionAuthority = "caller"
	}
	lang.Environment = e.Environment()
	lang.Capabilities = caps
	lang.Loop = loop
	return &pilotage.Manifest{
		Pilotage:  pilotage.Version,
		Server:    &pilotage.ServerInfo{Name: "pilothouse", Version: Version},
		Languages: []pilotage.LanguageEntry{lang},
	}
}
