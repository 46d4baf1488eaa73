package devices

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// checkParseFlat asserts that whatever parseFlat accepts, json.Unmarshal
// into a map[string]any decodes to the same members.
func checkParseFlat(t *testing.T, p []byte) bool {
	t.Helper()
	ms, ok := parseFlat(p, nil)
	if !ok {
		return false
	}
	var obj map[string]any
	if err := json.Unmarshal(p, &obj); err != nil || obj == nil {
		t.Fatalf("%q: parseFlat accepted what json.Unmarshal rejects (%v)", p, err)
	}
	if len(obj) != len(ms) {
		t.Fatalf("%q: %d members, json.Unmarshal %d", p, len(ms), len(obj))
	}
	for i, m := range ms {
		if i > 0 && bytes.Compare(ms[i-1].key, m.key) >= 0 {
			t.Fatalf("%q: members not sorted and unique", p)
		}
		want, ok := obj[string(m.key)]
		if !ok {
			t.Fatalf("%q: key %q not in json.Unmarshal's map", p, m.key)
		}
		if wf, isF := want.(float64); isF {
			if gf, _ := m.val.(float64); math.Float64bits(gf) != math.Float64bits(wf) {
				t.Fatalf("%q: %q = %v, json.Unmarshal %v", p, m.key, m.val, want)
			}
			continue
		}
		if !reflect.DeepEqual(m.val, want) {
			t.Fatalf("%q: %q = %#v, json.Unmarshal %#v", p, m.key, m.val, want)
		}
	}
	return true
}

func TestParseFlat(t *testing.T) {
	for _, c := range []struct {
		in   string
		fast bool
	}{
		{`{}`, true},
		{" \t\r\n{ \"b\" : \"x\" ,\n\"a\":1 } ", true},
		{`{"a":-0,"b":1.5e-7,"c":1E+2,"d":0.1,"e":-12345678901234567890}`, true},
		{`{"a":true,"b":false,"c":null,"d":""}`, true},
		{`{"state":"ON","brightness":254,"linkquality":80}`, true},
		{`{"a":1e400}`, false},      // json.Unmarshal fails: the message is skipped
		{`{"a":1,"a":2}`, false},    // the last wins
		{`{"a":{"b":1}}`, false},    // nested
		{`{"a":[1]}`, false},        // nested
		{`{"é":1}`, false},          // non-ASCII
		{`{"a":"\u00e9"}`, false},   // escape
		{`{"a\"b":1}`, false},       // escape in a key
		{"{\"a\":\"\xff\"}", false}, // invalid UTF-8
		{`null`, false},
		{`[1]`, false},
		{`"x"`, false},
		{`1`, false},
		{``, false},
		{`{"a":1}x`, false},
		{`{"a":1,}`, false},
	} {
		if got := checkParseFlat(t, []byte(c.in)); got != c.fast {
			t.Errorf("%q: fast path %v, want %v", c.in, got, c.fast)
		}
	}
}

func FuzzParseFlat(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":"x","c":true,"d":null}`, `{"a":1e400}`, `{"a":1,"a":2}`, `{"a":{"b":1}}`, ` {"b" : -0.5e3 } `, `{"a":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) { checkParseFlat(t, p) })
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
