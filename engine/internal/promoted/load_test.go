package promoted

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// TestHeldKeepsTheFirst: refs are content-addressed, so a second body
// kept under a ref is the same program and the first one stays.
func TestHeldKeepsTheFirst(t *testing.T) {
	var h Held
	if h.Get("automation.x@0") != nil {
		t.Fatal("an empty Held holds a body")
	}
	first, second := NewBody(program(), "automation.x@0", nil), NewBody(program(), "automation.x@0", nil)
	if got := h.Keep("automation.x@0", first); got != first {
		t.Fatal("Keep did not hold the first body")
	}
	if got := h.Keep("automation.x@0", second); got != first || h.Get("automation.x@0") != first {
		t.Fatal("a second body replaced the first")
	}
}

// TestLoaderOrder: a caller is registered after its callee even when the
// wall clock made the callee look younger; only installed bodies are
// held; a body that no longer compiles is left out, the rest loaded.
func TestLoaderOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	callee := &pilotage.Entry{ID: "automation.callee@1", Kind: pilotage.KindAutomation, Callable: true}
	compiled := map[string]*rules.Compiled{
		"automation.caller@1": {Raw: []byte(`{"name":"caller"}`), Refs: []string{callee.ID}, Entries: []*pilotage.Entry{callee}},
		"automation.callee@1": {Raw: []byte(`{"name":"callee"}`)},
	}
	progs := []storage.Program{
		{Ref: "automation.callee@1", CreatedAt: t0.Add(time.Hour)}, // the clock stepped back
		{Ref: "automation.caller@1", CreatedAt: t0},
		{Ref: "automation.broken@1", CreatedAt: t0},
	}
	var h Held
	var added []string
	Loader{
		Held: &h,
		Compile: func(pr storage.Program) (*rules.Compiled, error) {
			if c, ok := compiled[pr.Ref]; ok {
				return c, nil
			}
			return nil, errors.New("no longer compiles")
		},
		Add: func(en *pilotage.Entry, _ *rules.Compiled) { added = append(added, en.ID) },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}.Load(progs, map[string]bool{"automation.caller@1": true})
	if len(added) != 2 || added[0] != "automation.callee@1" || added[1] != "automation.caller@1" {
		t.Fatalf("registered %v, want the callee, then the caller", added)
	}
	if h.Get("automation.caller@1") == nil || h.Get("automation.callee@1") != nil || h.Get("automation.broken@1") != nil {
		t.Fatal("held other bodies than the installed one")
	}
}
