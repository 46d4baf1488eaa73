package bucket

import (
	"testing"
	"time"
)

func TestLevel(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	var b Bucket
	steps := []struct {
		name  string
		at    time.Time
		spend float64
		want  float64
	}{
		{"full at first", t0, 70, 100},
		{"no time, no refill", t0, 0, 30},
		{"half a second at 10/s", t0.Add(500 * time.Millisecond), 0, 35},
		{"never past the capacity", t0.Add(time.Hour), 150, 100},
		{"a debt is paid first", t0.Add(time.Hour + time.Second), 0, -40},
		{"a clock set back keeps what it holds", t0, 0, -40},
		{"and refills from there", t0.Add(2 * time.Second), 0, -20},
	}
	for _, s := range steps {
		if got := b.Level(s.at, 10, 100); got != s.want {
			t.Fatalf("%s: level %v, want %v", s.name, got, s.want)
		}
		b.Tokens -= s.spend
	}
}
