package model

import (
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
