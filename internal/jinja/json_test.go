package jinja

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzJSONValue: the payload decoder accepts what encoding/json accepts
// and reads the same values.
func FuzzJSONValue(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1.5,"x",null,true]}`, `"\u00e9\ud83d\ude00\n"`, `-0.5e3`, `[]`, `{"a":{"b":{}}}`, ` 1 `, `01`, `"\x01"`, `{"a":1,}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		werr := json.Unmarshal(b, &want)
		got, gerr := decodeJSON(b)
		if werr != nil && strings.Contains(werr.Error(), "cannot unmarshal number") {
			return // out of float range: Python reads inf, encoding/json refuses
		}
		if (werr == nil) != (gerr == nil) {
			if utf8.Valid(b) {
				t.Fatalf("%q: encoding/json %v, decoder %v", b, werr, gerr)
			}
			return
		}
		if werr == nil && utf8.Valid(b) && !reflect.DeepEqual(asFloats(got), want) {
			t.Fatalf("%q: %#v, want %#v", b, got, want)
		}
	})
}

func asFloats(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = asFloats(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = asFloats(e)
		}
		return out
	}
	return v
}
