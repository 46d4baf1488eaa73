package devices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/devices/internal/z2m"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The prober checks, independently of how the catalog builds a device,
// that every expose of a Zigbee2MQTT definition is usable: a published
// value has a state (or event) whose schema admits what Zigbee2MQTT
// publishes; a settable one is accepted by the set action's input schema
// (as the rules validator checks it) and by Call, which publishes exactly
// the payload Zigbee2MQTT takes; a gettable one has a get action; and the
// set keys Zigbee2MQTT documents for lights work. What fails is a gap.

type probeGap struct {
	kind   string // what failed, with the expose's outer shape
	detail string
}

type probeResult struct {
	probes int
	gaps   []probeGap
	marked bool   // the device entry says it is not fully modelled
	typ    string // the device's type tag and its set action's risk
}

func (f *probeResult) verdict() string {
	switch {
	case len(f.gaps) == 0:
		return "full"
	case f.probes > len(f.gaps):
		return "partial"
	}
	return "none"
}

type prober struct {
	tb      testing.TB
	c       *Catalog
	conn    *fakeConn
	dev     string // device id
	topic   string // <base>/<friendly_name>
	schemas map[string]*jsonschema.Schema
	dups    map[string]bool // keys exposed more than once
	f       probeResult
}

// sample is a value to send and what Zigbee2MQTT must receive for it.
type sample struct{ in, out any }

func probeZHCDevice(tb testing.TB, d *zhcDevice) *probeResult {
	c, _ := newTestCatalog()
	conn := newFakeConn()
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", "["+string(d.raw)+"]"))
	p := &prober{tb: tb, c: c, conn: conn, dev: model.Slug(d.dev.FriendlyName), topic: "zigbee2mqtt/" + d.dev.FriendlyName,
		schemas: map[string]*jsonschema.Schema{}}
	if de, ok := c.Snapshot().Get(p.dev); ok {
		p.f.marked = hasTag(de, "partial") || hasTag(de, "unmodelled")
		for _, tag := range de.Tags {
			if strings.HasPrefix(tag, "type:") {
				p.f.typ = tag
			}
		}
	}
	if a, ok := c.Snapshot().Get(p.dev + ".set"); ok {
		p.f.typ += " " + string(a.Risk)
	}
	if d.dev.Definition == nil {
		p.gap("definition", nil, "no definition")
		return &p.f
	}
	p.dups = exposedTwice(d.dev.Definition.Exposes)
	for _, e := range d.dev.Definition.Exposes {
		if isSpecificExpose(e.Type) {
			for _, f := range e.Features {
				p.expose(f)
			}
			p.lightExtras(e)
			continue
		}
		p.expose(e)
	}
	return &p.f
}

func (p *prober) gap(kind string, e *z2m.Expose, detail string) {
	if e != nil {
		kind += " [" + strings.SplitN(shapeSigs(e, "", nil)[0], ">", 2)[0] + "]"
	}
	p.f.gaps = append(p.f.gaps, probeGap{kind, detail})
}

func (p *prober) expose(e z2m.Expose) {
	key := z2m.ExposeKey(e)
	if key == "" {
		p.f.probes++
		p.gap("expose without property or name", &e, "")
		return
	}
	if e.Access&z2m.AccessPublished != 0 {
		p.state(key, &e)
	}
	if e.Access&z2m.AccessSet != 0 {
		p.set(key, &e)
	}
	if e.Access&4 != 0 {
		p.get(key, &e)
	}
}

func (p *prober) schema(raw json.RawMessage) *jsonschema.Schema {
	if s, ok := p.schemas[string(raw)]; ok {
		return s
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		p.tb.Fatalf("schema %s: %v", raw, err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("mem:///s.json", doc); err != nil {
		p.tb.Fatal(err)
	}
	s, err := comp.Compile("mem:///s.json")
	if err != nil {
		p.tb.Fatalf("schema %s: %v", raw, err)
	}
	p.schemas[string(raw)] = s
	return s
}

// admits validates v as the rules validator would (numbers as JSON
// numbers).
func (p *prober) admits(raw json.RawMessage, v any) bool {
	b, _ := json.Marshal(v)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		p.tb.Fatal(err)
	}
	return p.schema(raw).Validate(inst) == nil
}

func (p *prober) state(key string, e *z2m.Expose) {
	p.f.probes++
	ent, ok := p.c.Snapshot().Get(p.dev + "." + model.Slug(key))
	switch {
	case !ok:
		p.gap("state missing", e, key)
		return
	case key == "action" && e.Type == "enum" && e.Access&z2m.AccessSet == 0:
		if ent.Kind != pilotage.KindEvent {
			p.gap("action not an event", e, key)
		}
		return
	case ent.Kind != pilotage.KindState:
		p.gap("state of another kind", e, key+": "+string(ent.Kind))
		return
	}
	for _, s := range stateSamples(e) {
		if !p.admits(ent.OutputSchema, s) {
			p.gap("state schema rejects a published value", e, fmt.Sprintf("%s = %v: %s", key, s, ent.OutputSchema))
			return
		}
	}
	// Zigbee2MQTT publishes it in the device's JSON state: the state
	// entry's live value is what was published.
	v := stateSamples(e)[0]
	b, _ := json.Marshal(map[string]any{key: v})
	p.c.HandleMessage(msg(p.topic, string(b)))
	if l, _ := p.c.Live(ent.ID); !reflect.DeepEqual(l.Value, decoded(p.tb, map[string]any{"v": v})["v"]) {
		p.gap("state not ingested", e, fmt.Sprintf("%s: published %s, live %v", ent.ID, b, l.Value))
	}
}

func (p *prober) set(key string, e *z2m.Expose) {
	for _, s := range setSamples(e) {
		p.call(e, map[string]any{key: s.in}, map[string]any{key: s.out})
	}
	if p.dups[key] {
		return // another shape of key may admit what this one does not
	}
	for _, bad := range illFormed(e) {
		p.reject(e, map[string]any{key: bad})
	}
}

// call sends args to the set action and checks what is published.
func (p *prober) call(e *z2m.Expose, args, want map[string]any) {
	p.f.probes++
	id := p.dev + ".set"
	ent, ok := p.c.Snapshot().Get(id)
	if !ok {
		p.gap("set action missing", e, fmt.Sprint(args))
		return
	}
	if !p.admits(ent.InputSchema, args) {
		p.gap("set schema rejects", e, fmt.Sprintf("%v: %s", args, ent.InputSchema))
		return
	}
	n := len(p.conn.published())
	if err := p.c.Call(context.Background(), id, decoded(p.tb, args)); err != nil {
		p.gap("set rejects", e, err.Error())
		return
	}
	pubs := p.conn.published()
	if len(pubs) != n+1 || pubs[n].Topic != p.topic+"/set" {
		p.gap("set publishes elsewhere", e, fmt.Sprint(pubs[n:]))
		return
	}
	var got any
	if err := json.Unmarshal([]byte(pubs[n].Payload), &got); err != nil || !reflect.DeepEqual(got, decoded(p.tb, want)) {
		p.gap("set publishes another payload", e, fmt.Sprintf("%s, want %v", pubs[n].Payload, want))
	}
}

// reject checks that an ill-formed value is refused by both the schema and
// Call.
func (p *prober) reject(e *z2m.Expose, args map[string]any) {
	p.f.probes++
	id := p.dev + ".set"
	ent, ok := p.c.Snapshot().Get(id)
	if !ok {
		p.gap("set action missing", e, "")
		return
	}
	if p.admits(ent.InputSchema, args) || p.c.Call(context.Background(), id, decoded(p.tb, args)) == nil {
		p.gap("set accepts an ill-formed value", e, fmt.Sprint(args))
	}
}

func (p *prober) get(key string, e *z2m.Expose) {
	p.f.probes++
	id := p.dev + ".get"
	ent, ok := p.c.Snapshot().Get(id)
	if !ok {
		p.gap("get action missing", e, key)
		return
	}
	args := map[string]any{key: ""}
	if ent.Risk != pilotage.RiskRead || !p.admits(ent.InputSchema, args) {
		p.gap("get schema rejects", e, fmt.Sprintf("%s %s", ent.Risk, ent.InputSchema))
		return
	}
	n := len(p.conn.published())
	if err := p.c.Call(context.Background(), id, args); err != nil {
		p.gap("get rejects", e, err.Error())
		return
	}
	pubs := p.conn.published()
	want := fmt.Sprintf(`{%q:""}`, key)
	if len(pubs) != n+1 || pubs[n].Topic != p.topic+"/get" || pubs[n].Payload != want {
		p.gap("get publishes another payload", e, fmt.Sprint(pubs[n:]))
	}
}

// lightExtras probes the set keys Zigbee2MQTT documents for a light beyond
// its exposes: transition, moving/stepping and the colour forms.
func (p *prober) lightExtras(l z2m.Expose) {
	if l.Type != "light" {
		return
	}
	for _, f := range l.Features {
		if f.Access&z2m.AccessSet == 0 {
			continue
		}
		for _, args := range lightExtraSamples(f) {
			p.call(&l, args, args)
		}
	}
}

func lightExtraSamples(f z2m.Expose) []map[string]any {
	key := z2m.ExposeKey(f)
	suffix := ""
	if f.Endpoint != "" {
		suffix = "_" + f.Endpoint
	}
	switch f.Name {
	case "state":
		return []map[string]any{{key: f.ValueOn, "transition": 2.0}}
	case "brightness":
		return []map[string]any{{"brightness_step" + suffix: -40.0}, {"brightness_move" + suffix: "stop"},
			{"brightness_step_onoff" + suffix: 20.0}, {"brightness_move_onoff" + suffix: 30.0}}
	case "color_temp":
		return []map[string]any{{"color_temp_step" + suffix: 99.0}, {"color_temp_move" + suffix: "stop"}}
	case "color_xy":
		return []map[string]any{{key: map[string]any{"hex": "#547CFF"}}, {key: map[string]any{"r": 46.0, "g": 102.0, "b": 150.0}},
			{key: map[string]any{"rgb": "46,102,150"}}}
	case "color_hs":
		return []map[string]any{{key: map[string]any{"h": 360.0, "s": 100.0, "b": 100.0}}, {key: map[string]any{"hsv": "360,100,100"}},
			{"hue_step" + suffix: -90.0}, {"saturation_move" + suffix: 55.0}}
	}
	return nil
}

// decoded is v as json.Unmarshal gives it (what Call receives from a
// rule).
func decoded(tb testing.TB, v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func numericBase(e *z2m.Expose) float64 {
	v := 0.0
	if e.ValueMin != nil {
		v = *e.ValueMin
	} else if e.ValueMax != nil && *e.ValueMax < 0 {
		v = *e.ValueMax
	}
	return v
}

// stateSamples are values Zigbee2MQTT may publish for e.
func stateSamples(e *z2m.Expose) []any {
	switch e.Type {
	case "binary":
		return []any{e.ValueOn, e.ValueOff}
	case "numeric":
		out := []any{numericBase(e)}
		for _, ps := range e.Presets {
			out = append(out, ps.Value)
		}
		return out
	case "enum":
		return e.Values
	case "text":
		return []any{"text"}
	case "list":
		if e.ItemType == nil {
			return []any{[]any{}}
		}
		return []any{listOf(e, stateSamples(e.ItemType)[0])}
	case "composite":
		obj := map[string]any{}
		for i := range e.Features {
			f := &e.Features[i]
			if k := z2m.ExposeKey(*f); k != "" {
				obj[k] = stateSamples(f)[0]
			}
		}
		return []any{obj}
	}
	return []any{"unknown"}
}

// listOf is a list of e's item (length_min items, at least one).
func listOf(e *z2m.Expose, item any) []any {
	n := 1
	if e.LengthMin != nil && *e.LengthMin > 1 {
		n = int(*e.LengthMin)
	}
	out := make([]any, n)
	for i := range out {
		out[i] = item
	}
	return out
}

// setSamples are values a rule may send for e, with what Zigbee2MQTT must
// receive: a preset by name is sent as its value (what the Zigbee2MQTT
// frontend sends; converters that map names, like color_temp's, accept
// the value too).
func setSamples(e *z2m.Expose) []sample {
	switch e.Type {
	case "binary":
		out := []sample{{e.ValueOn, e.ValueOn}, {e.ValueOff, e.ValueOff}}
		if e.ValueToggle != nil {
			out = append(out, sample{e.ValueToggle, e.ValueToggle})
		}
		return out
	case "numeric":
		return numericSetSamples(e)
	case "enum":
		out := make([]sample, 0, len(e.Values))
		for _, v := range e.Values {
			out = append(out, sample{v, v})
		}
		if len(out) == 0 {
			out = append(out, sample{"any", "any"})
		}
		return out
	case "list":
		if e.ItemType == nil {
			return []sample{{[]any{}, []any{}}}
		}
		it := setSamples(e.ItemType)[0]
		return []sample{{listOf(e, it.in), listOf(e, it.out)}}
	case "composite":
		return []sample{compositeSetSample(e)}
	}
	return []sample{{"text", "text"}}
}

func numericSetSamples(e *z2m.Expose) []sample {
	base := numericBase(e)
	out := []sample{{base, base}}
	if e.ValueStep != nil && *e.ValueStep > 0 {
		v := base + *e.ValueStep/2
		if e.ValueMax == nil || v <= *e.ValueMax {
			out = append(out, sample{v, v}) // the step is a hint
		}
	}
	for _, ps := range e.Presets {
		out = append(out, sample{ps.Name, ps.Value}, sample{ps.Value, ps.Value})
	}
	return out
}

func compositeSetSample(e *z2m.Expose) sample {
	in, out := map[string]any{}, map[string]any{}
	for i := range e.Features {
		f := &e.Features[i]
		k := z2m.ExposeKey(*f)
		if k == "" || f.Access&z2m.AccessSet == 0 && z2m.AnySettable(e.Features) {
			continue
		}
		s := setSamples(f)[0]
		in[k], out[k] = s.in, s.out
	}
	return sample{in, out}
}

// illFormed are values Zigbee2MQTT's expose rules out: a number out of
// range that is no preset, an unknown member of a composite, a list item
// of the wrong type, a list too long or too short.
func illFormed(e *z2m.Expose) []any {
	switch e.Type {
	case "numeric":
		var out []any
		if e.ValueMax != nil && !isPresetValue(e, *e.ValueMax+1) {
			out = append(out, *e.ValueMax+1)
		}
		if e.ValueMin != nil && !isPresetValue(e, *e.ValueMin-1) {
			out = append(out, *e.ValueMin-1)
		}
		return append(out, "no such preset")
	case "composite":
		if len(e.Features) > 0 {
			return []any{map[string]any{"no_such_member": 1.0}}
		}
		return []any{"not an object"}
	}
	if e.Type != "list" || e.ItemType == nil {
		return nil
	}
	item := setSamples(e.ItemType)[0].in
	var out []any
	switch e.ItemType.Type {
	case "numeric":
		out = append(out, []any{"not a number"})
	case "composite", "enum", "binary", "text":
		out = append(out, []any{math.Pi})
	}
	if e.LengthMax != nil {
		l := make([]any, int(*e.LengthMax)+1)
		for i := range l {
			l[i] = item
		}
		out = append(out, l)
	}
	if e.LengthMin != nil && *e.LengthMin > 0 {
		out = append(out, []any{})
	}
	return out
}

func isPresetValue(e *z2m.Expose, v float64) bool {
	for _, p := range e.Presets {
		if p.Value == v {
			return true
		}
	}
	return false
}

// exposedTwice lists the keys exposed more than once (at top level or in
// a specific expose).
func exposedTwice(es []z2m.Expose) map[string]bool {
	seen, out := map[string]bool{}, map[string]bool{}
	for _, e := range es {
		fs := []z2m.Expose{e}
		if isSpecificExpose(e.Type) {
			fs = e.Features
		}
		for _, f := range fs {
			k := z2m.ExposeKey(f)
			out[k] = out[k] || seen[k]
			seen[k] = true
		}
	}
	return out
}
