package jinja

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONOut: to_json and tojson write what Home Assistant's and Jinja's
// do.
func TestJSONOut(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ value_json | to_json }}", `{"b":[1,2.5,null,true],"a":"<é>"}`, `{"a":"\u003cé\u003e","b":[1,2.5,null,true]}`},
		{"{{ value_json | tojson }}", `{"b":[1,"it's"],"a":{}}`, `{"a": {}, "b": [1, "it\u0027s"]}`},
		{"{{ {2: 'x', none: 1, true: 2, 'a': (1, 2)} | to_json }}", "", `{"2":"x","a":[1,2],"null":1,"true":2}`},
		{"{{ {'a': 1, 'a': 2} | to_json }}", "", `{"a":2}`},
		{"{{ (1e308 * 10) | string }}", "", "inf"},
		{"{{ now() | to_json }}", "", "{}"},
	})
	runErrCases(t, []errCase{
		{"{{ value_json.x | to_json }}", `{}`, "no JSON form"},
		{"{{ (1e308 * 10) | to_json }}", "", "no JSON form"},
		{"{{ {(1, 2): 1} | to_json }}", "", "keys must be"},
	})
}

// FuzzJSONString: the JSON string writer writes what encoding/json
// writes (HTML-safe).
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "<&>'", "\x00\x1f\x7f\b\f\n\r\t", "é\u2028\u2029", "\xff\xfe", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		p := printer{limit: 8*len(s) + 2}
		p.jsonString(s, false)
		if string(p.b) != string(want) || p.err != nil {
			t.Fatalf("%q: %s, want %s (%v)", s, p.b, want, p.err)
		}
		p = printer{limit: 8*len(s) + 2}
		p.jsonString(s, true)
		if got := string(p.b); got != strings.ReplaceAll(string(want), "'", `\u0027`) {
			t.Fatalf("%q with apostrophes: %s", s, got)
		}
	})
}
