package jinja

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// datetime is a Python datetime (aware): now(), utcnow(), as_datetime().
type datetime struct{ t time.Time }

func (d datetime) attr(name string) (any, bool) {
	switch name {
	case "year":
		return d.t.Year(), true
	case "month":
		return int(d.t.Month()), true
	case "day":
		return d.t.Day(), true
	case "hour":
		return d.t.Hour(), true
	case "minute":
		return d.t.Minute(), true
	case "second":
		return d.t.Second(), true
	case "microsecond":
		return d.t.Nanosecond() / 1000, true
	}
	return nil, false
}

// isoformat is datetime.isoformat(sep): microseconds only when not zero.
func (d datetime) isoformat(sep string) string {
	layout := "2006-01-02" + sep + "15:04:05"
	if d.t.Nanosecond()/1000 != 0 {
		layout += ".000000"
	}
	return d.t.Format(layout + "-07:00")
}

func timeGlobals(g map[string]builtin) {
	g["now"] = func(s *state, _ []any, _ map[string]any) (any, error) { return datetime{s.clock().Local()}, nil }
	g["utcnow"] = func(s *state, _ []any, _ map[string]any) (any, error) { return datetime{s.clock().UTC()}, nil }
	g["as_timestamp"] = func(s *state, a []any, kw map[string]any) (any, error) { return asTimestamp(a, kw, 1) }
	g["as_datetime"] = func(s *state, a []any, kw map[string]any) (any, error) { return asDatetime(a, kw, 1) }
}

func timeFilters(f map[string]builtin) {
	f["as_timestamp"] = func(s *state, a []any, kw map[string]any) (any, error) { return asTimestamp(a, kw, 1) }
	f["as_datetime"] = func(s *state, a []any, kw map[string]any) (any, error) { return asDatetime(a, kw, 1) }
	f["timestamp_local"] = func(s *state, a []any, kw map[string]any) (any, error) {
		return fromTimestamp(a, kw, 1, func(t time.Time) string { return datetime{t.Local()}.isoformat("T") })
	}
	f["timestamp_utc"] = func(s *state, a []any, kw map[string]any) (any, error) {
		return fromTimestamp(a, kw, 1, func(t time.Time) string { return datetime{t.UTC()}.isoformat("T") })
	}
	f["timestamp_custom"] = func(s *state, a []any, kw map[string]any) (any, error) {
		format, err := strArg(s, a, kw, 1, "format_string", "%Y-%m-%d %H:%M:%S")
		if err == nil {
			err = chargeFormat(s, format)
		}
		if err != nil {
			return nil, err
		}
		local := truthy(argOr(a, kw, 2, "local", true))
		return fromTimestamp(a, kw, 3, func(t time.Time) string {
			if local {
				return strftime(t.Local(), format)
			}
			return strftime(t.UTC(), format)
		})
	}
}

func (s *state) clock() time.Time {
	if s.now.IsZero() {
		return time.Now()
	}
	return s.now
}

// fromTimestamp renders a Unix timestamp; defaultAt is the position of the
// default argument.
func fromTimestamp(a []any, kw map[string]any, defaultAt int, f func(time.Time) string) (any, error) {
	ts, ok := pyFloatOf(a[0])
	if ok && !math.IsNaN(ts) && !math.IsInf(ts, 0) && math.Abs(ts) < 1e11 {
		sec, frac := math.Modf(ts)
		return f(time.Unix(int64(sec), int64(math.Round(frac*1e6))*1000)), nil
	}
	if d, has := arg(a, kw, defaultAt, "default"); has {
		return d, nil
	}
	return nil, errNoDefault("timestamp", a[0])
}

func asTimestamp(a []any, kw map[string]any, defaultAt int) (any, error) {
	if len(a) > 0 {
		switch v := a[0].(type) {
		case datetime:
			return float64(v.t.UnixMicro()) / 1e6, nil
		case string:
			if t, ok := parseISO(v); ok {
				return float64(t.UnixMicro()) / 1e6, nil
			}
		}
		if f, ok := pyFloatOf(a[0]); ok {
			return f, nil
		}
	}
	if d, has := arg(a, kw, defaultAt, "default"); has {
		return d, nil
	}
	return nil, errors.New("as_timestamp got invalid input and no default was specified")
}

func asDatetime(a []any, kw map[string]any, defaultAt int) (any, error) {
	if len(a) > 0 {
		switch v := a[0].(type) {
		case datetime:
			return v, nil
		case string:
			if t, ok := parseISO(v); ok {
				return datetime{t}, nil
			}
		}
	}
	if d, has := arg(a, kw, defaultAt, "default"); has {
		return d, nil
	}
	return nil, errors.New("as_datetime got invalid input and no default was specified")
}

// parseISO reads an ISO 8601 date and time (a date alone is midnight
// UTC; no offset is UTC).
func parseISO(s string) (time.Time, bool) {
	if len(s) > maxNumberLen {
		return time.Time{}, false
	}
	s = strings.TrimSpace(strings.Replace(s, " ", "T", 1))
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// chargeFormat charges a strftime format by the most it can make: a
// directive of two bytes writes at most nine ("September").
func chargeFormat(s *state, f string) error {
	return s.spendBytes(5 * len(f))
}

// strftime formats t with Python's directives.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		b.WriteString(strftimeOne(t, f[i]))
	}
	return b.String()
}

func strftimeOne(t time.Time, c byte) string {
	two := func(n int) string { return fmt.Sprintf("%02d", n) }
	switch c {
	case 'Y':
		return strconv.Itoa(t.Year())
	case 'y':
		return two(t.Year() % 100)
	case 'm':
		return two(int(t.Month()))
	case 'd':
		return two(t.Day())
	case 'H':
		return two(t.Hour())
	case 'I':
		return two((t.Hour()+11)%12 + 1)
	case 'M':
		return two(t.Minute())
	case 'S':
		return two(t.Second())
	case 'f':
		return fmt.Sprintf("%06d", t.Nanosecond()/1000)
	case 'p':
		return t.Format("PM")
	case 'a':
		return t.Format("Mon")
	case 'A':
		return t.Format("Monday")
	case 'b':
		return t.Format("Jan")
	case 'B':
		return t.Format("January")
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay())
	case 'w':
		return strconv.Itoa(int(t.Weekday()))
	case 'z':
		return t.Format("-0700")
	case 'Z':
		return t.Format("MST")
	case '%':
		return "%"
	}
	return "%" + string(c)
}

func timeMethods(m map[string]builtin) {
	self := func(f func(s *state, d datetime, a []any) (any, error)) builtin {
		return func(s *state, a []any, _ map[string]any) (any, error) {
			d, ok := a[0].(datetime)
			if !ok {
				return nil, fmt.Errorf("%s object has no such method", pyType(a[0]))
			}
			return f(s, d, a)
		}
	}
	m["strftime"] = self(func(s *state, d datetime, a []any) (any, error) {
		f, err := strArg(s, a, nil, 1, "", "")
		if err == nil {
			err = chargeFormat(s, f)
		}
		if err != nil {
			return nil, err
		}
		return strftime(d.t, f), nil
	})
	m["timestamp"] = self(func(_ *state, d datetime, _ []any) (any, error) { return float64(d.t.UnixMicro()) / 1e6, nil })
	m["isoformat"] = self(func(s *state, d datetime, a []any) (any, error) {
		sep, err := strArg(s, a, nil, 1, "", "T")
		if err == nil {
			err = s.spendBytes(len(sep) + 32)
		}
		if err != nil {
			return nil, err
		}
		return d.isoformat(sep), nil
	})
}
