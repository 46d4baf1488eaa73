package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

func TestConfigFileHistory(t *testing.T) {
	c, _, err := loadYAML(t, "history: {retention: P3D, max_rows: 5000}\n")
	if err != nil {
		t.Fatal(err)
	}
	if h := c.engineConfig().History; h.Off || h.Retention != 72*time.Hour || h.MaxRows != 5000 {
		t.Fatalf("history: %+v", h)
	}
	c, _, err = loadYAML(t, "history: {enabled: false}\n")
	if err != nil || !c.engineConfig().History.Off {
		t.Fatalf("disabled: %+v %v", c.History, err)
	}
	if d := defaultConfig().engineConfig().History; d.Off || d.Retention != 0 {
		t.Fatalf("default: %+v (the engine fills in 10 days)", d)
	}
	for body, want := range map[string]string{
		"history: {retention: soon}\n":   "history.retention",
		"history: {max_rows: -1}\n":      "history.max_rows",
		"history: {keep: P1D}\n":         "history.keep: unknown key",
		"history: {enabled: maybe}\n":    "history.enabled",
		"history: [P1D]\n":               "want a mapping",
		"history: {max_rows: 10.5}\n":    "want an integer",
		"history: {retention: PT0S}\n":   "positive duration",
		"history: {retention: 10days}\n": "history.retention",
	} {
		if _, _, err := loadYAML(t, body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// TestHealthzShowsHistory: /healthz reports the history recorder,
// its drops included.
func TestHealthzShowsHistory(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	resp, err := http.Get(a.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		History engine.HistoryStatus `json:"history"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if !h.History.On || h.History.Retention != "P10D" || h.History.MaxRows != 2_000_000 {
		t.Fatalf("healthz history: %+v", h.History)
	}
}
