package model

import (
	"reflect"
	"testing"
	"time"
)

func benchTemplate(b *testing.B, src, payload string) {
	tp := CompileTemplate(src)
	if tp.Unsupported != "" {
		b.Fatal(tp.Unsupported)
	}
	p := []byte(payload)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tp.Render(p, time.Time{}); err != nil {
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

func TestTemplates(t *testing.T) {
	cases := []struct {
		tpl, payload string
		want         any
		wantErr      string
		unsupported  bool
	}{
		{"{{ value }}", "ON", "ON", "", false},
		{"{{value_json.POWER1}}", `{"POWER1":"OFF"}`, "OFF", "", false},
		{"{{ value_json['ENERGY'].Today }}", `{"ENERGY":{"Today":0.087}}`, "0.087", "", false},
		{`{{ value_json["state"] }}`, `{"state":"LOCK"}`, "LOCK", "", false},
		{"{{ value_json.a[1].b }}", `{"a":[{"b":1},{"b":2}]}`, "2", "", false},
		{"{{ value_json.lux | float }}", `{"lux":"253"}`, "253.0", "", false},
		{"{{ value_json.t | round(1) }}", `{"t":21.349}`, "21.3", "", false},
		{"{{ value | int }}", `7.9`, "7", "", false},
		{"{{ value_json.missing }}", `{"a":1}`, nil, "template path not present in payload", false},
		{"{{ value_json.a }}", `not json`, nil, "'value_json' is undefined", false},
		{"{{ '%0.1f'|format(value_json.RainTotal) }}", `{"RainTotal":12.345}`, "12.3", "", false},
		{`{% if value in ("5") %}3{% endif %}`, `5`, "3", "", false},
		{"{{ value_json.a }} {{ value }}", `{}`, "{}", "", false},
		{"{{ value_json.a | default(0) }}", `{}`, "0", "", false},
		{"{{ states('sensor.x') }}", ``, nil, "", true},
		{"{% macro f() %}{% endmacro %}", ``, nil, "", true},
		{"{{ value | frobnicate }}", ``, nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.tpl, func(t *testing.T) {
			tp := CompileTemplate(tc.tpl)
			if got := tp != nil && tp.Unsupported != ""; got != tc.unsupported {
				t.Fatalf("unsupported = %v (%+v)", got, tp)
			}
			if tc.unsupported {
				return
			}
			v, err := tp.Render([]byte(tc.payload), time.Time{})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(v, tc.want) {
				t.Fatalf("render = %#v, %v; want %#v", v, err, tc.want)
			}
		})
	}
}

func TestRenderCommand(t *testing.T) {
	cases := []struct {
		tpl  string
		v    any
		vars map[string]any
		want string
	}{
		{"", 50, nil, "50"},
		{"", 21.0, nil, "21.0"},
		{`{ "position": {{ position }} }`, 128, map[string]any{"position": 50}, `{ "position": 50 }`},
		{"{{value}}", "ON", nil, "ON"},
		{"{{ value | int }}", 1.0, nil, "1"},
		{"{% if value %}1{% endif %}", 1.0, nil, "1"},
		{`{"temperature": {{ value | round(1) }}}`, 21.25, nil, `{"temperature": 21.2}`},
		{"{{action}}", nil, map[string]any{"action": "ARM_AWAY", "code": ""}, "ARM_AWAY"},
	}
	for _, tc := range cases {
		got, err := CompileTemplate(tc.tpl).RenderCommand(tc.v, tc.vars)
		if err != nil || got != tc.want {
			t.Errorf("renderCommand(%q, %v) = %q, %v; want %q", tc.tpl, tc.v, got, err, tc.want)
		}
	}
}
