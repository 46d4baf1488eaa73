package clock

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxDuration is the longest duration there is (about 292 years): a
// longer one is refused, never wrapped around to a negative value.
const MaxDuration = time.Duration(math.MaxInt64)

// secondsDuration turns a number of seconds into a duration, saying what is
// wrong with one that is not finite, negative, or longer than MaxDuration.
func secondsDuration(f float64) (time.Duration, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("got %s seconds: not a finite number", strconv.FormatFloat(f, 'g', -1, 64))
	case f < 0:
		return 0, fmt.Errorf("got %s seconds: a duration cannot be negative", strconv.FormatFloat(f, 'g', -1, 64))
	case f*float64(time.Second) >= float64(MaxDuration):
		return 0, tooLong(strconv.FormatFloat(f, 'g', -1, 64) + " seconds")
	}
	return time.Duration(f * float64(time.Second)), nil
}

func tooLong(what string) error {
	return fmt.Errorf("got %s: longer than the longest duration, %s (about 292 years)", what, MaxDuration)
}

// goDuration is the shape of a Go duration (time.ParseDuration refuses
// one that is too long with the same error as a malformed one).
var goDuration = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`)

// ParseDuration accepts Go durations ("500ms", "2m", "1h30m") and ISO 8601
// durations ("PT2M"), the two forms home-automation users write.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "P") || strings.HasPrefix(s, "-P") {
		return parseISODuration(s)
	}
	d, err := time.ParseDuration(s)
	if err != nil && goDuration.MatchString(s) && strings.ContainsAny(s, "0123456789") {
		return 0, tooLong(strconv.Quote(s))
	}
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want e.g. \"500ms\", \"90s\", \"2m\", \"1h30m\" or ISO 8601 \"PT2M\"", s)
	}
	return d, nil
}

func parseISODuration(s string) (time.Duration, error) {
	neg := false
	orig := s
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	s = s[1:] // P
	var d time.Duration
	inTime := false
	num := ""
	for _, r := range s {
		switch {
		case r == 'T':
			inTime = true
		case (r >= '0' && r <= '9') || r == '.':
			num += string(r)
		default:
			if num == "" {
				return 0, fmt.Errorf("bad duration %q", orig)
			}
			var f float64
			if _, err := fmt.Sscanf(num, "%g", &f); err != nil {
				return 0, fmt.Errorf("bad duration %q", orig)
			}
			num = ""
			var unit time.Duration
			switch {
			case r == 'D' && !inTime:
				unit = 24 * time.Hour
			case r == 'W' && !inTime:
				unit = 7 * 24 * time.Hour
			case r == 'H' && inTime:
				unit = time.Hour
			case r == 'M' && inTime:
				unit = time.Minute
			case r == 'S' && inTime:
				unit = time.Second
			default:
				return 0, fmt.Errorf("bad duration %q (years and months are not fixed lengths)", orig)
			}
			part := f * float64(unit)
			if part >= float64(MaxDuration-d) {
				return 0, tooLong(strconv.Quote(orig))
			}
			d += time.Duration(part)
		}
	}
	if num != "" || len(s) == 0 {
		return 0, fmt.Errorf("bad duration %q", orig)
	}
	if neg {
		d = -d
	}
	return d, nil
}

// secondsOf is seconds(): a bad duration fails the evaluation (it used to
// count as 0 seconds).
func SecondsOf(s string) (float64, error) {
	d, err := ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("seconds: %w", err)
	}
	return d.Seconds(), nil
}

// HumanDuration spells a duration out: "5 minutes", "1 hour and 30
// minutes", "2 days", "500 milliseconds", "1.5 seconds". Negative
// durations are spelled as their size.
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d == 0:
		return "0 seconds"
	case d < time.Second:
		if d%time.Millisecond == 0 {
			return core.Plural(int(d/time.Millisecond), "millisecond", "")
		}
		return d.String()
	case d < time.Minute && d%time.Second != 0:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " seconds"
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}}
	var parts []string
	for _, u := range units {
		if n := d / u.size; n > 0 {
			parts = append(parts, core.Plural(int(n), u.name, ""))
			d -= n * u.size
		}
	}
	if d > 0 { // a sub-second rest beside larger units
		parts = append(parts, d.String())
	}
	return core.JoinList(parts, "and")
}

// durationValue reads a delay or hold duration: text ("90s", "PT2M") or a
// number of seconds.
func DurationValue(v any) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case string:
		var err error
		if d, err = ParseDuration(x); err != nil {
			return 0, err
		}
	case time.Duration:
		d = x
	default:
		f, ok := core.InterpNumber(v)
		if !ok {
			return 0, fmt.Errorf("got %s, want a duration such as \"90s\" or a number of seconds", core.InterpTypeName(v))
		}
		return secondsDuration(f)
	}
	if d < 0 {
		return 0, fmt.Errorf("got %s: a duration cannot be negative", d)
	}
	return d, nil
}
