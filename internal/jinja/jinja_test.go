package jinja

import (
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestJinjaIdioms: value templates as integrations write them, rendered as
// Home Assistant renders them (Jinja with its filters, output stripped).
func TestJinjaIdioms(t *testing.T) {
	cases := []struct{ tpl, payload, want string }{
		{"{{ value_json.temperature }}", `{"temperature":21}`, "21"},
		{"{{ value_json.temperature }}", `{"temperature":21.0}`, "21.0"},
		{"{{ value_json.temperature | float | round(1) }}", `{"temperature":"21.349"}`, "21.3"},
		{"{{ value_json.t | round }}", `{"t":21.5}`, "22"},
		{"{{ value_json.t | round }}", `{"t":22.5}`, "22"},
		{"{{ value_json.t | round(1, 'floor') }}", `{"t":21.39}`, "21.3"},
		{"{{ value_json.t | round(1, 'half') }}", `{"t":21.3}`, "21.5"},
		{"{{ value_json.t | round(0, 'half') }}", `{"t":21.3}`, "21"}, // Home Assistant: int() when precision is 0
		{"{{ value_json.v | float(0) }}", `{"v":"n/a"}`, "0"},
		{"{{ value_json.v | int(0) }}", `{"v":"n/a"}`, "0"},
		{"{{ value_json.v | int(base=16) }}", `{"v":"ff"}`, "255"},
		{"{{ value_json.v | int / 10 }}", `{"v":"215"}`, "21.5"},
		{"{{ value_json.v | multiply(0.1) | round(1) }}", `{"v":215}`, "21.5"},
		{"{{ value_json.a | default('x') }}", `{}`, "x"},
		{"{{ value_json.a | default('x', true) }}", `{"a":""}`, "x"},
		{"{{ value_json.x is defined }}", `{"x":1}`, "True"},
		{"{% if value_json.x is defined %}{{ value_json.x }}{% else %}0{% endif %}", `{}`, "0"},
		{"{%- if value_json.state == 'ON' -%}\n  on\n{%- elif value_json.state == 'OFF' -%}\n  off\n{%- else -%}\n  unknown\n{%- endif -%}", `{"state":"OFF"}`, "off"},
		{"{% if value_json.state == 'ON' %}\n  on\n{% else %}\n  off\n{% endif %}", `{"state":"ON"}`, "on"},
		{"{{ {'0':'off','1':'heat','2':'cool'}[value] }}", `1`, "heat"},
		{"{{ {'0':'off','1':'heat'}[value] | default('off') }}", `7`, "off"},
		{"{% set m = {0:'off', 1:'heat'} %}{{ m[value_json.mode] }}", `{"mode":1}`, "heat"},
		{"{% set values = {None:None,'idle':'idle','heat':'heating'} %}{{ values[value_json.rs] }}", `{"rs":"heat"}`, "heating"},
		{"{% set values = {None:None,'idle':'idle'} %}{{ values[value_json.rs] }}", `{"rs":null}`, "None"},
		{"{{ value | lower }}", `ON`, "on"},
		{"{{ value_json.permit_join | lower }}", `{"permit_join":false}`, "false"},
		{"{{ '%0.1f' | format(value_json.r) }}", `{"r":12.345}`, "12.3"},
		{"{{ '%.2f' % value_json.r }}", `{"r":2}`, "2.00"},
		{"{{ '%s-%d' % (value, 3) }}", `x`, "x-3"},
		{"{{ value_json.mode | replace('_', ' ') | title }}", `{"mode":"fan_only"}`, "Fan Only"},
		{"{{ value_json['sensor-1'] }}", `{"sensor-1":5}`, "5"},
		{"{{ value.split(',')[1] }}", `a,b`, "b"},
		{"{{ 'ON' if value_json.power else 'OFF' }}", `{"power":true}`, "ON"},
		{"{{ value_json.list | length }}", `{"list":[1,2,3]}`, "3"},
		{"{{ value_json.attr.get('key', 'def') }}", `{"attr":{}}`, "def"},
		{"{{ value_json['update'].get('progress', 'null') }}", `{"update":{"state":"idle"}}`, "null"},
		{"{{ value_json.items }}", `{"items":3}`, "<built-in method items>"},
		{"{{ value_json['items'] }}", `{"items":3}`, "3"},
		{"{{ value_json.b }}", `{"b":true}`, "True"},
		{"{{ value_json.o }}", `{"o":{"x":1,"y":"z"}}`, "{'x': 1, 'y': 'z'}"},
		{"{{ value_json.n }}", `{"n":null}`, "None"},
		{"{{ value_json.l }}", `{"l":[1,"a",null,1.5]}`, "[1, 'a', None, 1.5]"},
		{"{{ value_json.x | to_json }}", `{"x":{"b":[1,2],"a":"é"}}`, `{"a":"é","b":[1,2]}`},
		{"{{ value_json.x | tojson }}", `{"x":{"b":[1,2],"a":"<"}}`, `{"a": "\u003c", "b": [1, 2]}`},
		{"{{ (value_json.x | from_json).a }}", `{"x":"{\"a\":1}"}`, "1"},
		{"{{ value_json.v | bool }}", `{"v":"on"}`, "True"},
		{"{{ iif(value_json.v, 'yes', 'no') }}", `{"v":0}`, "no"},
		{"{{ value_json.v | iif('yes', 'no', 'none') }}", `{"v":null}`, "none"},
		{"{{ value_json.v | is_defined }}", `{"v":1}`, "1"},
		{"{{ value_json.t | float > 20 and value_json.h | float < 50 }}", `{"t":"21","h":"40"}`, "True"},
		{"{{ 1 < value_json.t < 30 }}", `{"t":21}`, "True"},
		{"{{ value_json.s in ['a', 'b'] }}", `{"s":"b"}`, "True"},
		{"{{ 'x' not in value }}", `abc`, "True"},
		{"{{ value_json.v // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }}", `{"v":7}`, "3 -4 2 1024"},
		{"{{ 10 / 4 }} {{ 10 / 5 }}", ``, "2.5 2.0"},
		{"{{ value_json.v | bitwise_and(4) > 0 }}", `{"v":5}`, "True"},
		{"{{ value | regex_replace('[^0-9]', '') }}", `a1b2`, "12"},
		{"{{ value | regex_findall_index('(\\d+)') }}", `t=42;u=7`, "42"},
		{"{{ value is match('^ab') }} {{ value is search('c') }}", `abc`, "True True"},
		{"{{ value | regex_match('b') }}", `abc`, "False"},
		{"{% set ns = namespace(n=0) %}{% for x in value_json.l %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}", `{"l":[1,2,3]}`, "6"},
		{"{% for s in value_json.s if s.id == 2 %}{{ s.t }}{% endfor %}", `{"s":[{"id":1,"t":10},{"id":2,"t":20}]}`, "20"},
		{"{% for k, v in value_json.d.items() %}{{ k }}={{ v }};{% endfor %}", `{"d":{"b":2,"a":1}}`, "a=1;b=2;"},
		{"{% for x in range(5) %}{% if x == 3 %}{% break %}{% endif %}{{ loop.index }}{% endfor %}", ``, "123"},
		{"{{ value_json.l | map(attribute='v') | sum }}", `{"l":[{"v":1},{"v":2.5}]}`, "3.5"},
		{"{{ value_json.l | selectattr('on') | map(attribute='n') | join(',') }}", `{"l":[{"n":"a","on":true},{"n":"b","on":false}]}`, "a"},
		{"{{ value_json.l | max }} {{ value_json.l | min }} {{ value_json.l | sort | first }}", `{"l":[3,1,2]}`, "3 1 1"},
		{"{{ value[1:3] }} {{ value[::-1] }}", `abcd`, "bc dcba"},
		{"{{ value_json.s | truncate(5, True, '', 0) }}", `{"s":"abcdefgh"}`, "abcde"},
		{"{{ value_json.t | timestamp_custom('%Y-%m-%d %H:%M', false) }}", `{"t":86400}`, "1970-01-02 00:00"},
		{"{{ value_json.t | timestamp_utc }}", `{"t":1.5}`, "1970-01-01T00:00:01.500000+00:00"},
		{"{{ as_timestamp('1970-01-02T00:00:00+00:00') }}", ``, "86400.0"},
		{"{{ now().year > 2000 }}", ``, "True"},
		{"{# comment #}  {{- value -}}  ", `x`, "x"},
		{"{% raw %}{{ value }}{% endraw %}", `x`, "{{ value }}"},
		{"{{ \"}}\" ~ value }}", `x`, "}}x"},
		{"{{ value_json.a.b }}", `{"a":{"b":{"c":[1]}}}`, "{'c': [1]}"},
		{"{{ zip([1,2],['a','b']) | list }}", ``, "[(1, 'a'), (2, 'b')]"},
		{"{{ dict.from_keys([('a', 1)]) | to_json }}", ``, `{"a":1}`},
		{"{{ 1e16 }} {{ 0.00001 }} {{ 123456789.0 }}", ``, "1e+16 1e-05 123456789.0"},
	}
	for _, tc := range cases {
		tp := compileTemplate(tc.tpl)
		if tp.unsupported != "" {
			t.Errorf("%q: %s", tc.tpl, tp.unsupported)
			continue
		}
		got, err := tp.render([]byte(tc.payload), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		if err != nil || got != tc.want {
			t.Errorf("%q on %s = %q, %v; want %q", tc.tpl, tc.payload, got, err, tc.want)
		}
	}
}

// TestJinjaErrors: what Home Assistant reports as a render error (the
// state is then left as it was).
func TestJinjaErrors(t *testing.T) {
	for _, tc := range []struct{ tpl, payload, want string }{
		{"{{ value_json.v | float }}", `{"v":"n/a"}`, "float got invalid input 'n/a' and no default was specified"},
		{"{{ value_json.a.b }}", `{}`, "is undefined"},
		{"{{ value_json.x | is_defined }}", `{}`, "is undefined"},
		{"{{ 1 / 0 }}", ``, "division by zero"},
		{"{{ value_json.s + 1 }}", `{"s":"a"}`, "unsupported operand types"},
		{"{{ 'a' < 1 }}", ``, "not supported between"},
		{"{{ value | regex_match('(?<=a)b') }}", `ab`, "pattern"},
	} {
		_, err := compileTemplate(tc.tpl).render([]byte(tc.payload), time.Time{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.tpl, err, tc.want)
		}
	}
}

// TestJinjaUnsupported: what the interpreter does not have is refused
// when the template is compiled, with the reason.
func TestJinjaUnsupported(t *testing.T) {
	for _, tc := range []struct{ tpl, want string }{
		{"{{ states('sensor.x') }}", "function states() is not supported"},
		{"{{ value | frobnicate }}", "filter frobnicate is not supported"},
		{"{{ value is frob }}", "test frob is not supported"},
		{"{{ value.frob() }}", "method .frob() is not supported"},
		{"{% macro f() %}{% endmacro %}", `statement "macro" is not supported`},
		{"{% include 'x' %}", `statement "include" is not supported`},
		{"{% if value %}", "missing {% endif %}"},
		{"{{ value ", `"}}" not closed`},
		{"{{ (1 }}", `expected ","`},
		{"{{ " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + " }}", "nested too deeply"},
		{strings.Repeat("x", maxTemplateLen+1), "template longer than"},
	} {
		tp := compileTemplate(tc.tpl)
		if tp == nil || !strings.Contains(tp.unsupported, tc.want) {
			t.Errorf("%.40q: unsupported = %+v, want %q", tc.tpl, tp, tc.want)
		}
	}
}

// TestJinjaBounded: a template from whoever may publish discovery cannot
// make one rendering run long, grow memory, panic or leak goroutines.
func TestJinjaBounded(t *testing.T) {
	bad := []string{
		"{{ 'a' * -1 }}",
		"{{ 'ab' * 100000000 }}",
		"{{ value * 1000000 }}",
		"{{ [1] * 100000000 }}",
		"{{ range(1000000000) | first }}",
		"{% for i in range(10000) %}{% for j in range(10000) %}{{ i }}{% endfor %}{% endfor %}",
		"{% set x = value ~ value %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{% set x = x ~ x %}{{ x | length }}",
		"{{ value | replace('', value) | replace('', value) | replace('', value) }}",
		"{{ 10 ** 10 ** 10 }}",
		"{{ (-1) ** 1000000000000 }}",
		"{{ '%09999999d' % 1 }}",
		"{{ value | truncate(1000000000) }}",
		"{% for x in value %}{{ value | regex_findall('.') | unique | length }}{% endfor %}",
	}
	payload := []byte(strings.Repeat("x", 4000))
	g0 := runtime.NumGoroutine()
	for _, src := range bad {
		tp := compileTemplate(src)
		if tp.unsupported != "" {
			continue
		}
		// The fastest of three renderings: the bound is on the work, not
		// on how busy the machine is (CI shares two cores).
		var out any
		var err error
		fastest := time.Duration(1 << 62)
		for range 3 {
			t0 := time.Now()
			out, err = tp.render(payload, time.Time{})
			fastest = min(fastest, time.Since(t0))
		}
		if limit := 250 * time.Millisecond * raceSlowdown; fastest > limit {
			t.Errorf("%.50q took %v (limit %v)", src, fastest, limit)
		}
		if s, _ := out.(string); len(s) > maxJValue {
			t.Errorf("%.50q made %d bytes", src, len(s))
		}
		if err == nil && !strings.Contains(src, "truncate") && !strings.Contains(src, "**") && !strings.Contains(src, "-1 }}") {
			t.Errorf("%.50q rendered without error: %.40v", src, out)
		}
		if err != nil && !errors.Is(err, errJBudget) && !errors.Is(err, errJSize) && !strings.Contains(err.Error(), "range()") &&
			!strings.Contains(err.Error(), "format width") {
			t.Logf("%.50q: %v", src, err)
		}
	}
	if g := runtime.NumGoroutine(); g > g0 {
		t.Errorf("goroutines %d -> %d", g0, g)
	}
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"{{ value_json.a | float | round(1) }}", "{%- if value_json.state == 'ON' -%}on{%- else -%}off{%- endif -%}",
		"{{ {'0':'off'}[value] | default('x') }}", "{% for x in value_json.l %}{{ loop.index }}{% endfor %}",
		"{{ value | regex_replace('a', 'b') }}", "{{ '%0.1f' | format(value_json.v) }}", "{% set ns = namespace(a=[]) %}{% set ns.a = ns.a + [1] %}{{ ns.a }}"} {
		f.Add(s, `{"a":"1.25","state":"ON","l":[1,2],"v":3}`)
	}
	f.Fuzz(func(t *testing.T, src, payload string) {
		tp := compileTemplate(src)
		if tp == nil || tp.unsupported != "" {
			return
		}
		t0 := time.Now()
		out, _ := tp.render([]byte(payload), time.Time{})
		if s, _ := out.(string); len(s) > maxJValue {
			t.Fatalf("output of %d bytes", len(s))
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("rendering took %v", d)
		}
		_, _ = tp.renderCommand(1.5, map[string]any{"position": 50})
	})
}

func benchTemplate(b *testing.B, src, payload string) {
	tp := compileTemplate(src)
	if tp.unsupported != "" {
		b.Fatal(tp.unsupported)
	}
	p := []byte(payload)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tp.render(p, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}

const benchPayload = `{"temperature":21.5,"humidity":40,"battery":90,"linkquality":120,"state":"OFF"}`

// BenchmarkTemplate is the cost of one state message's template: payload
// decoding included.
func BenchmarkTemplate(b *testing.B) {
	b.Run("path", func(b *testing.B) { benchTemplate(b, "{{ value_json.temperature }}", benchPayload) })
	b.Run("filters", func(b *testing.B) { benchTemplate(b, "{{ value_json.temperature | float | round(1) }}", benchPayload) })
	b.Run("if-elif", func(b *testing.B) {
		benchTemplate(b, "{%- if value_json.state == 'ON' -%}on{%- elif value_json.state == 'OFF' -%}off{%- else -%}unknown{%- endif -%}", benchPayload)
	})
	b.Run("dict", func(b *testing.B) { benchTemplate(b, "{{ {'0':'off','1':'heat','2':'cool'}[value] }}", "1") })
}

// FuzzJSONValue: the payload decoder accepts what encoding/json accepts
// and reads the same values.
func FuzzJSONValue(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1.5,"x",null,true]}`, `"\u00e9\ud83d\ude00\n"`, `-0.5e3`, `[]`, `{"a":{"b":{}}}`, ` 1 `, `01`, `"\x01"`, `{"a":1,}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		werr := json.Unmarshal(b, &want)
		got, gerr := decodeJSONValue(b)
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
