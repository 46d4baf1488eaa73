package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/mqtt"
)

// bigCatalog is a devices catalog with about n entries (Zigbee2MQTT lights:
// a device, five states and an action each).
func bigCatalog(tb testing.TB, n int) *devices.Catalog {
	tb.Helper()
	var devs []map[string]any
	for i := 0; i < n/7+1; i++ {
		devs = append(devs, map[string]any{
			"ieee_address": fmt.Sprintf("0x%016x", i+1), "friendly_name": fmt.Sprintf("light_%04d", i), "type": "Router",
			"supported": true, "interview_completed": true,
			"definition": map[string]any{"model": "LED1", "vendor": "IKEA", "description": "bulb",
				"exposes": []any{
					map[string]any{"type": "light", "features": []any{
						map[string]any{"type": "binary", "name": "state", "property": "state", "access": 7, "value_on": "ON", "value_off": "OFF", "value_toggle": "TOGGLE"},
						map[string]any{"type": "numeric", "name": "brightness", "property": "brightness", "access": 7, "value_min": 0, "value_max": 254},
						map[string]any{"type": "numeric", "name": "color_temp", "property": "color_temp", "access": 7, "value_min": 153, "value_max": 500, "unit": "mired"},
					}},
					map[string]any{"type": "numeric", "name": "linkquality", "property": "linkquality", "access": 1, "unit": "lqi"},
					map[string]any{"type": "enum", "name": "power_on_behavior", "property": "power_on_behavior", "access": 7, "values": []string{"off", "on", "previous"}},
				}},
		})
	}
	payload, _ := json.Marshal(devs)
	c := devices.NewCatalog(devices.Options{Logger: quiet()})
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: payload, Retained: true})
	if got := len(c.Snapshot().Entries()); got < n {
		tb.Fatalf("catalog has %d entries, want ≥ %d", got, n)
	}
	return c
}

func p99(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)*99/100]
}

// BenchmarkLookupList5000 pages through a 5,000-entry catalog (limit 50).
func BenchmarkLookupList5000(b *testing.B) {
	e := New(Config{}, bigCatalog(b, 5000), nil, quiet())
	ctx := context.Background()
	var cursor string
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		resp, err := e.Lookup(ctx, LookupRequest{Verb: "list", Limit: 50, Cursor: cursor})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		cursor = resp.(*ListResponse).NextCursor
	}
	b.ReportMetric(float64(p99(lat).Microseconds()), "p99-µs")
}

// BenchmarkLookupListQuery5000 is a free-text filtered page.
func BenchmarkLookupListQuery5000(b *testing.B) {
	e := New(Config{}, bigCatalog(b, 5000), nil, quiet())
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := e.Lookup(ctx, LookupRequest{Verb: "list", Limit: 50, Q: "brightness", Kind: "state"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(p99(lat).Microseconds()), "p99-µs")
}

// BenchmarkLookupGet5000 gets single entries with their live values.
func BenchmarkLookupGet5000(b *testing.B) {
	devs := bigCatalog(b, 5000)
	e := New(Config{}, devs, nil, quiet())
	ctx := context.Background()
	ids := devs.Snapshot().Entries()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := ids[i%len(ids)].ID
		t0 := time.Now()
		if _, err := e.Lookup(ctx, LookupRequest{Verb: "get", ID: id}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(p99(lat).Nanoseconds()), "p99-ns")
}

// TestLookupPagination walks the whole catalog page by page: every entry
// exactly once, in order, next_cursor iff more remain.
func TestLookupPagination(t *testing.T) {
	devs := bigCatalog(t, 700)
	e := New(Config{}, devs, nil, quiet())
	var cursor string
	var got []string
	for pages := 0; ; pages++ {
		resp, err := e.Lookup(context.Background(), LookupRequest{Verb: "list", Limit: 97, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		lr := resp.(*ListResponse)
		for _, it := range lr.Items {
			got = append(got, it.ID)
		}
		if lr.NextCursor == "" {
			break
		}
		cursor = lr.NextCursor
	}
	want := devs.Snapshot().Entries()
	if len(got) != len(want) {
		t.Fatalf("paged %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i].ID {
			t.Fatalf("entry %d = %s, want %s", i, got[i], want[i].ID)
		}
	}
	if _, err := e.Lookup(context.Background(), LookupRequest{Verb: "list", Cursor: "garbage!"}); err == nil {
		t.Fatal("a forged cursor was accepted")
	}
}
