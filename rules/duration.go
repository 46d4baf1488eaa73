package rules

import (
	"fmt"
	"strings"
	"time"
)

// ParseDuration accepts Go durations ("500ms", "2m", "1h30m") and ISO 8601
// durations ("PT2M"), the two forms home-automation users write.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "P") || strings.HasPrefix(s, "-P") {
		return parseISODuration(s)
	}
	d, err := time.ParseDuration(s)
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
			d += time.Duration(f * float64(unit))
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
