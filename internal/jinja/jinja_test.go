package jinja

import (
	"strings"
	"testing"
)

// TestJinjaIdioms: value templates as integrations write them, rendered as
// Home Assistant renders them (Jinja with its filters, output stripped).
func TestJinjaIdioms(t *testing.T) {
	cases := []renderCase{
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
	runCases(t, cases)
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
		_, err := render(t, tc.tpl, tc.payload)
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
		{strings.Repeat("x", MaxTemplateLen+1), "template longer than"},
	} {
		_, err := Compile(tc.tpl)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: Compile error %v, want %q", tc.tpl, err, tc.want)
		}
	}
}
