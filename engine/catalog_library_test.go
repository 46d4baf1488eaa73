package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// TestLibraryLookup measures lookup over the whole Zigbee2MQTT library
// (PILOTHOUSE_ZHC_DEVICES: the file devices/testdata/gen/zhc.js writes):
// list 500 per page through the catalog, and changed_since from the
// empty catalog page by page.
func TestLibraryLookup(t *testing.T) {
	path := os.Getenv("PILOTHOUSE_ZHC_DEVICES")
	if path == "" {
		t.Skip("set PILOTHOUSE_ZHC_DEVICES to the generated library (e.g. /tmp/zhc/devices.json)")
	}
	payload, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	devs := devices.NewCatalog(devices.Options{Logger: quiet()})
	e := New(Config{}, devs, nil, quiet())
	ctx := context.Background()
	r0, err := e.Lookup(ctx, LookupRequest{Verb: "list", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	empty := r0.(*ListResponse).CatalogVersion
	devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: payload, Retained: true})
	n := devs.Snapshot().Len()

	t0 := time.Now()
	var lat []time.Duration
	var bytes int
	cursor, pages := "", 0
	for {
		t1 := time.Now()
		r, err := e.Lookup(ctx, LookupRequest{Verb: "list", Limit: MaxListLimit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		lat = append(lat, time.Since(t1))
		bytes += len(b)
		pages++
		if cursor = r.(*ListResponse).NextCursor; cursor == "" {
			break
		}
	}
	total := time.Since(t0)
	first := lat[0]
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("%d entries: list 500/page x %d pages in %v (first page, view built: %v; page with its JSON encoding p50 %v p99 %v; %.1f MB JSON)",
		n, pages, total.Round(time.Millisecond), first.Round(time.Millisecond), lat[len(lat)/2].Round(time.Microsecond),
		lat[len(lat)*99/100].Round(time.Microsecond), float64(bytes)/1e6)

	t0 = time.Now()
	changes, cpages := 0, 0
	req := LookupRequest{Verb: "changed_since", CatalogVersion: empty}
	var maxPage time.Duration
	for {
		t1 := time.Now()
		r, err := e.Lookup(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		maxPage = max(maxPage, time.Since(t1))
		_ = b
		cr := r.(*ChangedResponse)
		changes += len(cr.Changes)
		cpages++
		if cr.NextCursor == "" {
			break
		}
		req.Cursor = cr.NextCursor
	}
	t.Logf("changed_since from empty: %d changes in %d pages, %v (slowest page %v)", changes, cpages, time.Since(t0).Round(time.Millisecond), maxPage.Round(time.Microsecond))
	if changes != n {
		t.Errorf("changed_since listed %d changes, want %d", changes, n)
	}
}

// TestChangedSincePages: changed_since pages in id order toward one
// version; a page's cursor keeps that version even when the catalog moves
// on; the cursor belongs to its baseline.
func TestChangedSincePages(t *testing.T) {
	devs := devices.NewCatalog(devices.Options{Logger: quiet()})
	e := New(Config{}, devs, nil, quiet())
	ctx := context.Background()
	r0, _ := e.Lookup(ctx, LookupRequest{Verb: "list", Limit: 1})
	empty := r0.(*ListResponse).CatalogVersion
	light := func(n int) mqtt.Message {
		var devs []map[string]any
		for i := 0; i < n; i++ {
			devs = append(devs, map[string]any{"ieee_address": fmt.Sprintf("0x%016x", i+1), "friendly_name": fmt.Sprintf("lamp_%02d", i),
				"definition": map[string]any{"model": "L", "vendor": "V", "description": "bulb", "exposes": []any{
					map[string]any{"type": "binary", "name": "state", "property": "state", "access": 7, "value_on": "ON", "value_off": "OFF"}}}})
		}
		b, _ := json.Marshal(devs)
		return mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: b}
	}
	devs.HandleMessage(light(10)) // 10 devices: device, state, set, get = 40 entries
	r1, err := e.Lookup(ctx, LookupRequest{Verb: "changed_since", CatalogVersion: empty, Limit: 15})
	if err != nil {
		t.Fatal(err)
	}
	p1 := r1.(*ChangedResponse)
	target := p1.CatalogVersion
	devs.HandleMessage(light(12)) // the catalog moves on between pages
	var ids []string
	for _, c := range p1.Changes {
		ids = append(ids, c.ID)
	}
	req := LookupRequest{Verb: "changed_since", CatalogVersion: empty, Limit: 15, Cursor: p1.NextCursor}
	for req.Cursor != "" {
		r, err := e.Lookup(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		p := r.(*ChangedResponse)
		if p.CatalogVersion != target {
			t.Fatalf("page toward %s, want %s", p.CatalogVersion, target)
		}
		for _, c := range p.Changes {
			ids = append(ids, c.ID)
		}
		req.Cursor = p.NextCursor
	}
	if len(ids) != 40 || !sort.StringsAreSorted(ids) {
		t.Fatalf("paged %d ids (sorted %v), want 40 in order", len(ids), sort.StringsAreSorted(ids))
	}
	// The rest is one call away from the version reached.
	r, err := e.Lookup(ctx, LookupRequest{Verb: "changed_since", CatalogVersion: target})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.(*ChangedResponse); len(p.Changes) != 8 || p.NextCursor != "" {
		t.Fatalf("from the first target: %v", p.Changes)
	}
	_, err = e.Lookup(ctx, LookupRequest{Verb: "changed_since", CatalogVersion: target, Cursor: p1.NextCursor})
	var re *pilotage.RequestError
	if !errors.As(err, &re) || re.Kind != pilotage.ErrInvalidRequest {
		t.Fatalf("a cursor with another baseline: %v", err)
	}
}
