package web

import (
	"go/build"
	"strings"
	"testing"
)

// TestAsksEngineOnly: the UI reads rules, runs and devices through the
// engine's scoped API, never storage or the device catalog directly, so
// scoping is written once (in engine). Tests may still build fixtures
// from them.
func TestAsksEngineOnly(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/pilothouse/pilothouse/"
	for _, imp := range pkg.Imports {
		switch strings.TrimPrefix(imp, mod) {
		case "storage", "devices", "mqtt", "rules":
			t.Errorf("web imports %s: ask the engine instead", imp)
		}
	}
}
