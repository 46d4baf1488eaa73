package jinja

import (
	"errors"
	"testing"
)

// TestTime: timestamps and datetimes as Home Assistant renders them (the
// table's clock is testNow, UTC).
func TestTime(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 86400 | timestamp_custom('%Y-%m-%d %H:%M %a %b %j', false) }}", "", "1970-01-02 00:00 Fri Jan 002"},
		{"{{ 1.5 | timestamp_utc }} {{ 'x' | timestamp_utc('n/a') }}", "", "1970-01-01T00:00:01.500000+00:00 n/a"},
		{"{{ as_timestamp('1970-01-02T00:00:00+00:00') }} {{ as_timestamp('x', 0) }}", "", "86400.0 0"},
		{"{{ utcnow().year }} {{ utcnow().isoformat() }} {{ utcnow().strftime('%H%%') }}", "", "2026 2026-01-02T03:04:05+00:00 03%"},
		{"{{ utcnow().month }}{{ utcnow().day }}{{ utcnow().hour }}{{ utcnow().minute }}{{ utcnow().second }}{{ utcnow().microsecond }}", "", "123450"},
		{"{{ as_datetime('2026-01-02 03:04') < utcnow() }} {{ as_datetime('2026-01-02').day }}", "", "True 2"},
	})
	runErrCases(t, []errCase{
		{"{{ 'x' | timestamp_custom }}", "", "timestamp got invalid input"},
		{"{{ as_datetime('x') }}", "", "as_datetime got invalid input"},
	})
}

// TestTimeCharged: a format is charged by the most it can make.
func TestTimeCharged(t *testing.T) {
	if _, err := render(t, "{{ 0 | timestamp_custom('%A' * 7000) }}", ""); !errors.Is(err, ErrSize) {
		t.Errorf("a 14 kB format: %v, want ErrSize", err)
	}
	if _, err := render(t, "{{ utcnow().isoformat('x' * 70000) }}", ""); !errors.Is(err, ErrSize) {
		t.Errorf("a 70 kB separator: %v, want ErrSize", err)
	}
}
