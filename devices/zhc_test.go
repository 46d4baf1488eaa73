package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/devices/internal/z2m"
	"github.com/pilothouse/pilothouse/mqtt"
)

// zhcDir holds what devices/testdata/gen/zhc.js wrote from the
// zigbee-herdsman-converters library: a subset of real devices showing
// every expose shape of the library, and the library-wide statistics.
const zhcDir = "testdata/zhc"

// zhcFullEnv names the full generated bridge/devices file that
// TestLibraryFidelity measures.
const zhcFullEnv = "PILOTHOUSE_ZHC_DEVICES"

type zhcStats struct {
	Version     string `json:"zigbee_herdsman_converters"`
	Definitions int    `json:"definitions"`
	Exposes     int    `json:"exposes"`
	Signatures  []struct {
		Signature string `json:"signature"`
		Exposes   int    `json:"exposes"`
		Devices   int    `json:"devices"`
		Example   string `json:"example"`
	} `json:"signatures"`
}

// zhcDevice is one generated device: its JSON and its decoded form.
type zhcDevice struct {
	raw json.RawMessage
	dev z2m.Device
}

func loadZHC(tb testing.TB, path string) []zhcDevice {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	out := make([]zhcDevice, len(raws))
	for i, r := range raws {
		out[i].raw = r
		if err := json.Unmarshal(r, &out[i].dev); err != nil {
			tb.Fatalf("%s: device %d: %v", path, i, err)
		}
	}
	return out
}

func loadZHCStats(tb testing.TB) zhcStats {
	tb.Helper()
	b, err := os.ReadFile(zhcDir + "/stats.json")
	if err != nil {
		tb.Fatal(err)
	}
	var s zhcStats
	if err := json.Unmarshal(b, &s); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestZHCSubsetModelled probes every device of the committed subset (one
// device per expose shape of the library): each is fully modelled, or its
// device entry says it is not.
func TestZHCSubsetModelled(t *testing.T) {
	for _, d := range loadZHC(t, zhcDir+"/devices.json") {
		f := probeZHCDevice(t, &d)
		if f.verdict() != "full" && !f.marked {
			t.Errorf("%s (%s): %s and not marked: %v", d.dev.FriendlyName, d.dev.Definition.Model, f.verdict(), f.gaps)
		}
		if f.probes < 2 {
			t.Errorf("%s: only %d probes", d.dev.FriendlyName, f.probes)
		}
	}
}

// --- shape signatures: the same as zhc.js computes ---

func isSpecificExpose(t string) bool {
	switch t {
	case "light", "switch", "lock", "cover", "climate", "fan":
		return true
	}
	return false
}

// jsType is JavaScript's typeof of a decoded JSON value (absent: nil).
func jsType(v any) string {
	switch v.(type) {
	case nil:
		return "undefined"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		return "number"
	}
	return "object"
}

func numericShapeFlags(e *z2m.Expose) []string {
	var f []string
	if len(e.Presets) > 0 {
		kinds := map[string]bool{}
		out := false
		for _, p := range e.Presets {
			v, ok := p.Value.(float64)
			if !ok {
				kinds["str"] = true
				continue
			}
			kinds["num"] = true
			if e.ValueMin != nil && v < *e.ValueMin || e.ValueMax != nil && v > *e.ValueMax {
				out = true
			}
		}
		ks := make([]string, 0, 2)
		for k := range kinds {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		f = append(f, "presets:"+strings.Join(ks, "+"))
		if out {
			f = append(f, "preset_out_of_range")
		}
	}
	if e.ValueStep != nil {
		f = append(f, "step")
	}
	return f
}

func shapeFlags(e *z2m.Expose) []string {
	var f []string
	switch e.Type {
	case "numeric":
		f = numericShapeFlags(e)
	case "binary":
		f = append(f, "on:"+jsType(e.ValueOn))
		if e.ValueToggle != nil {
			f = append(f, "toggle")
		}
	case "enum":
		if len(e.Values) == 0 {
			f = append(f, "novalues")
		} else if !model.AllStrings(e.Values) {
			f = append(f, "nonstring")
		}
	case "composite":
		if len(e.Features) == 0 {
			f = append(f, "nofeatures")
		} else if e.Access&z2m.AccessPublished != 0 && !anyPublished(e.Features) {
			f = append(f, "features_unpublished")
		}
	case "list":
		item := "none"
		if e.ItemType != nil {
			item = e.ItemType.Type
		}
		f = append(f, "item:"+item)
		if e.LengthMin != nil || e.LengthMax != nil {
			f = append(f, "length")
		}
	}
	return f
}

func anyPublished(fs []z2m.Expose) bool {
	for _, f := range fs {
		if f.Access&z2m.AccessPublished != 0 {
			return true
		}
	}
	return false
}

// shapeSigs appends the signature of e and of everything inside it.
func shapeSigs(e *z2m.Expose, ctx string, out []string) []string {
	parts := append([]string{ctx + e.Type, "a" + strconv.Itoa(e.Access)}, shapeFlags(e)...)
	out = append(out, strings.Join(parts, "/"))
	next := ctx + e.Type + ">"
	if strings.Count(ctx, ">") >= 2 {
		next = ctx // contexts nest two deep at most
	}
	for i := range e.Features {
		out = shapeSigs(&e.Features[i], next, out)
	}
	if e.ItemType != nil {
		out = shapeSigs(e.ItemType, next, out)
	}
	return out
}

// dupShapeSigs names properties exposed more than once with different
// shapes (an expose without its texts), each shape by its outer signature.
func dupShapeSigs(exposes []z2m.Expose) []string {
	byKey := map[string]map[string]string{}
	var order []string
	add := func(e *z2m.Expose) {
		k := z2m.ExposeKey(*e)
		if k == "" {
			return
		}
		c := *e
		c.Description, c.Label = "", ""
		shape, _ := json.Marshal(c)
		if byKey[k] == nil {
			byKey[k] = map[string]string{}
			order = append(order, k)
		}
		byKey[k][string(shape)] = shapeSigs(e, "", nil)[0]
	}
	for i := range exposes {
		e := &exposes[i]
		if !isSpecificExpose(e.Type) {
			add(e)
			continue
		}
		for j := range e.Features {
			add(&e.Features[j])
		}
	}
	var out []string
	for _, k := range order {
		if len(byKey[k]) < 2 {
			continue
		}
		var outer []string
		for _, s := range byKey[k] {
			outer = append(outer, s)
		}
		sort.Strings(outer)
		out = append(out, "dup:"+strings.Join(outer, "+"))
	}
	return out
}

func deviceShapeSigs(d *z2m.Device) []string {
	if d.Definition == nil {
		return nil
	}
	var out []string
	for i := range d.Definition.Exposes {
		out = shapeSigs(&d.Definition.Exposes[i], "", out)
	}
	return append(out, dupShapeSigs(d.Definition.Exposes)...)
}

// TestZHCShapesCovered fails when a shape the library has (per the
// committed statistics) is missing from the committed subset, or when this
// file's signatures and the generator's disagree.
func TestZHCShapesCovered(t *testing.T) {
	stats := loadZHCStats(t)
	got := map[string]string{}
	for _, d := range loadZHC(t, zhcDir+"/devices.json") {
		for _, s := range deviceShapeSigs(&d.dev) {
			got[s] = d.dev.Definition.Model
		}
	}
	want := map[string]bool{}
	for _, s := range stats.Signatures {
		want[s.Signature] = true
		if _, ok := got[s.Signature]; !ok {
			t.Errorf("shape %s (%d exposes, e.g. %s) is not in the subset: rerun devices/testdata/gen/zhc.js", s.Signature, s.Exposes, s.Example)
		}
	}
	for s, model := range got {
		if !want[s] {
			t.Errorf("shape %s of %s is not in the statistics: zhc.js and shapeSigs disagree", s, model)
		}
	}
	if len(want) < 100 || stats.Definitions < 4000 {
		t.Errorf("statistics look truncated: %d shapes, %d definitions", len(want), stats.Definitions)
	}
}

// libraryVerdicts probes every device of a generated file and returns the
// count per verdict and per gap kind.
func libraryVerdicts(tb testing.TB, devs []zhcDevice) (map[string]int, map[string]int) {
	verdicts, kinds := map[string]int{}, map[string]int{}
	for i := range devs {
		f := probeZHCDevice(tb, &devs[i])
		verdicts[f.verdict()]++
		if f.verdict() != "full" && f.marked {
			verdicts["marked"]++
		}
		for _, g := range f.gaps {
			kinds[g.kind]++
		}
		// The same without get actions and the light's extra keys (what
		// the exposes' own values need).
		var own probeResult
		own.probes = f.probes
		for _, g := range f.gaps {
			if strings.HasPrefix(g.kind, "get ") || strings.HasSuffix(g.kind, "[light/a0]") {
				own.probes--
				continue
			}
			own.gaps = append(own.gaps, g)
		}
		verdicts["exposes "+own.verdict()]++
		kinds["type "+f.typ]++
	}
	return verdicts, kinds
}

func formatCounts(m map[string]int, limit int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	var b strings.Builder
	for i, x := range l {
		if i == limit {
			fmt.Fprintf(&b, "  … %d more\n", len(l)-limit)
			break
		}
		fmt.Fprintf(&b, "  %6d  %s\n", x.v, x.k)
	}
	return b.String()
}

// TestLibraryFidelity measures the whole library when the generator's
// full file is present:
//
//	node devices/testdata/gen/zhc.js /tmp/zhc/node_modules/zigbee-herdsman-converters /tmp/zhc/devices.json /tmp/zhc/subset
//	PILOTHOUSE_ZHC_DEVICES=/tmp/zhc/devices.json go test ./devices -run TestLibraryFidelity -v
func TestLibraryFidelity(t *testing.T) {
	path := os.Getenv(zhcFullEnv)
	if path == "" {
		t.Skipf("set %s to the generated library (e.g. /tmp/zhc/devices.json)", zhcFullEnv)
	}
	devs := loadZHC(t, path)
	verdicts, kinds := libraryVerdicts(t, devs)
	t.Logf("%d devices: full %d, partial %d, none %d (marked with a reason: %d)\n"+
		"the exposes' own values only (no get, no light extras): full %d, partial %d, none %d\ngaps by kind, and device types with their set risk:\n%s",
		len(devs), verdicts["full"], verdicts["partial"], verdicts["none"], verdicts["marked"],
		verdicts["exposes full"], verdicts["exposes partial"], verdicts["exposes none"], formatCounts(kinds, 80))
}

// TestLibraryIngest measures the whole generated library arriving as one
// bridge/devices message (PILOTHOUSE_ZHC_DEVICES, see TestLibraryFidelity):
// the time until the snapshot holds it, the live heap it keeps, and
// coverage.
func TestLibraryIngest(t *testing.T) {
	path := os.Getenv(zhcFullEnv)
	if path == "" {
		t.Skipf("set %s to the generated library (e.g. /tmp/zhc/devices.json)", zhcFullEnv)
	}
	payload, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := NewCatalog(Options{Logger: quietLogger()})
	t0 := time.Now()
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: payload, Retained: true})
	d := time.Since(t0)
	payload = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	s := c.Snapshot()
	t0 = time.Now()
	n := len(s.Entries())
	flat := time.Since(t0)
	t.Logf("library: %d entries, %+v, ingested in %v (first Entries() %v), live heap %.1f MB (peak heap %.1f MB, sys %.1f MB)",
		n, c.Coverage(), d.Round(time.Millisecond), flat.Round(time.Microsecond), float64(after.HeapAlloc-before.HeapAlloc)/1e6,
		float64(after.HeapSys)/1e6, float64(after.Sys)/1e6)
	_ = payload
}

// TestWeeklyScheduleDayForms: the converter library takes a weekly
// schedule's days as {"day": "monday"} or as "monday"; the list form was
// refused at validate (16 definitions: Bosch BTH-RM230Z, Ubisys H1,
// Slacky-DIY thermostats). Both are offered and published as given.
func TestWeeklyScheduleDayForms(t *testing.T) {
	var devs []json.RawMessage
	b, err := os.ReadFile(zhcDir + "/devices.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &devs); err != nil {
		t.Fatal(err)
	}
	var viessmann json.RawMessage
	for _, d := range devs {
		if strings.Contains(string(d), `"friendly_name": "Viessmann ZK03840"`) || strings.Contains(string(d), `"friendly_name":"Viessmann ZK03840"`) {
			viessmann = d
		}
	}
	if viessmann == nil {
		t.Fatal("Viessmann ZK03840 not in the library sample")
	}
	h := startVariantHouse(t)
	if err := h.pub.Publish(context.Background(), "zigbee2mqtt/bridge/devices", []byte("["+string(viessmann)+"]"), 1, true); err != nil {
		t.Fatal(err)
	}
	h.waitID(t, "viessmann_zk03840.set")
	tr := []any{map[string]any{"transitionTime": map[string]any{"hour": 6.0, "minute": 30.0}, "heatSetpoint": 21.0}}
	for _, days := range [][]any{{"monday", "friday"}, {map[string]any{"day": "monday"}}} {
		arg := map[string]any{"weekly_schedule": map[string]any{"dayofweek": days, "transitions": tr}}
		want, _ := json.Marshal(arg)
		h.call(t, "viessmann_zk03840.set", arg, published{Topic: "zigbee2mqtt/Viessmann ZK03840/set", Payload: string(want), QoS: 0})
	}
	bad := map[string]any{"weekly_schedule": map[string]any{"dayofweek": []any{"someday"}, "transitions": tr}}
	if err := h.c.Call(context.Background(), "viessmann_zk03840.set", bad); err == nil {
		t.Error("an unknown day was accepted")
	}
}
