package z2m

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
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
