package main

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/web"
)

// numericPaths lists the JSON paths of every number in a value of type t,
// "*" standing for a map's key.
func numericPaths(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.PkgPath() == "time" {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			numericPaths(f.Type, join(prefix, name), out)
		}
	case reflect.Map:
		numericPaths(t.Elem(), join(prefix, "*"), out)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		*out = append(*out, prefix)
	}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// TestHealthPageKnowsEveryCounter: every number /healthz can report has
// a sentence on the web UI's health page, so a new counter fails here
// until it is explained (the page still shows it raw meanwhile).
func TestHealthPageKnowsEveryCounter(t *testing.T) {
	var paths []string
	numericPaths(reflect.TypeOf(health{}), "", &paths)
	if len(paths) < 60 {
		t.Fatalf("only %d numbers found in the health document: %q", len(paths), paths)
	}
	for _, p := range paths {
		if !web.KnowsCounter(p) {
			t.Errorf("/healthz %s has no sentence in web/internal/healthnote/notes.go", p)
		}
	}
}

// TestHealthPageSaysRefusedConfig: a discovery config over its bound is
// refused; the web UI's health page says what that means and what to do,
// the header links there, and the Devices page does not call the house
// fully modelled.
func TestHealthPageSaysRefusedConfig(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	page := func(path string) string {
		resp, err := http.Get(a.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := page("/devices"); !strings.Contains(body, "all fully modelled.") || strings.Contains(body, `id="health-notes"`) {
		t.Fatalf("/devices before: %.3000s", body)
	}
	if body := page("/health"); !strings.Contains(body, `id="all-well"`) {
		t.Fatalf("/health before: %.3000s", body)
	}
	pub := dialPub(t, a)
	huge := `{"name":"T","unique_id":"big_t","state_topic":"big/t","device":{"identifiers":["big"],"name":"Big"},"x":"` + strings.Repeat("x", 300<<10) + `"}`
	publishT(t, pub, "homeassistant/sensor/big/t/config", huge, false)
	testutil.Eventually(t, 15*time.Second, "the config refused", func() bool {
		_, h := getHealth(t, a.URL())
		return h.Devices.Refused.OversizedMessages == 1
	})
	body := page("/health")
	for _, want := range []string{`id="health-notes">1 to look at</span>`, `id="note-devices.refused.oversized_messages"`,
		"1 MQTT message was refused unread as too large: a discovery config over 256 KiB leaves its device out",
		"What to do: The server log names each topic", "devices.refused.oversized_messages = 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("/health lacks %q", want)
		}
	}
	body = page("/devices")
	if strings.Contains(body, "fully modelled") || !strings.Contains(body, "1 message was refused for its size (a discovery config or a state).") ||
		!strings.Contains(body, `<a href="/health" id="see-health">See health (1 to look at)</a>`) {
		t.Errorf("/devices after a refused config: %.3000s", body)
	}
}
