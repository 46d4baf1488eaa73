package jinja

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Ceilings of one rendering under the fuzzer: far above what the budget
// allows (TestAttacksBounded holds the attacks to a second and 64 MiB), so
// only a charge that is missing trips them.
const (
	fuzzTime  = 2 * time.Second
	fuzzAlloc = 256 << 20
)

// FuzzRender compiles and renders arbitrary templates against a payload,
// as a value template and as a command template. A rendering must end
// within fuzzTime and fuzzAlloc, stay within its budget and MaxValue, and
// never panic. The corpus (testdata/fuzz/FuzzRender) holds the attacks of
// issue 28. Run it with GOMAXPROCS=1 and -parallel=1 so that the
// allocation counted is this rendering's.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"{{ value_json.a | float | round(1) }}", "{%- if value_json.state == 'ON' -%}on{%- else -%}off{%- endif -%}",
		"{{ {'0':'off'}[value] | default('x') }}", "{% for x in value_json.l %}{{ loop.index }}{% endfor %}",
		"{{ value | regex_replace('a', 'b') }}", "{{ '%0.1f' | format(value_json.v) }}", "{% set ns = namespace(a=[]) %}{% set ns.a = ns.a + [1] %}{{ ns.a }}",
		"{{ value_json | tojson }} {{ value_json | to_json }} {{ value_json.l | sort | unique | list }}",
		"{{ dict(value_json) == value_json }} {{ value_json.l < [1, 3] }} {{ 'a' in value_json }}"} {
		f.Add(s, `{"a":"1.25","state":"ON","l":[1,2],"v":3}`)
	}
	f.Fuzz(func(t *testing.T, src, payload string) {
		tp, err := Compile(src)
		if err != nil {
			return
		}
		inputs := []Input{
			{Value: payload, JSON: ValueJSON([]byte(payload))},
			{Value: 1.5, JSON: NoJSON, Vars: map[string]any{"position": 50}},
		}
		for _, in := range inputs {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			t0 := time.Now()
			res, err := tp.Render(in, DefaultBudget)
			d := time.Since(t0)
			runtime.ReadMemStats(&m1)
			if d > fuzzTime {
				t.Fatalf("rendering took %v", d)
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > fuzzAlloc {
				t.Fatalf("rendering allocated %d MiB", a>>20)
			}
			if err != nil && strings.HasPrefix(err.Error(), "template failed") {
				t.Fatal(err)
			}
			if len(res.Text) > MaxValue || res.Spent > DefaultBudget {
				t.Fatalf("output of %d bytes, %d units spent", len(res.Text), res.Spent)
			}
		}
	})
}
