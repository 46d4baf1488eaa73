package rules

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The phrasing helpers plans, narrations and pages share, so that what
// people read is a sentence a person would write: "2 triggers" not
// "2 trigger(s)", "a, b and c" not "a, b, c", "5 minutes" not "5m0s".

// Plural is n with the noun in the number n needs: "1 trigger",
// "2 triggers", "0 conditions". many "" adds an s to one.
func Plural(n int, one, many string) string {
	if many == "" {
		many = one + "s"
	}
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// JoinList joins items the way a sentence lists them: "a", "a and b",
// "a, b and c" (conj "and" or "or"; no serial comma).
func JoinList(items []string, conj string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	last := len(items) - 1
	return strings.Join(items[:last], ", ") + " " + conj + " " + items[last]
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
			return Plural(int(d/time.Millisecond), "millisecond", "")
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
			parts = append(parts, Plural(int(n), u.name, ""))
			d -= n * u.size
		}
	}
	if d > 0 { // a sub-second rest beside larger units
		parts = append(parts, d.String())
	}
	return JoinList(parts, "and")
}

// every is "every " plus a duration, without a lone leading 1: "every
// hour", "every 5 minutes", "every 1 hour and 30 minutes".
func every(d time.Duration) string {
	s := HumanDuration(d)
	if rest, ok := strings.CutPrefix(s, "1 "); ok && !strings.Contains(rest, " and ") {
		return "every " + rest
	}
	return "every " + s
}

// Capitalize upper-cases the first letter of a sentence.
func Capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || unicode.IsUpper(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// durationText shows a duration as the plan reads it: a constant spelled
// out ("5 minutes"), a template as written.
func durationText(ds *durSpec) string {
	if ds.constant {
		return HumanDuration(ds.d)
	}
	return templateText(ds.t)
}

// SunPhrase is "sunset", "15 minutes after sunset" or "1 hour and 30
// minutes before sunrise".
func SunPhrase(event string, off time.Duration) string {
	switch {
	case off > 0:
		return HumanDuration(off) + " after " + event
	case off < 0:
		return HumanDuration(-off) + " before " + event
	}
	return event
}

// dayNamesLong spells weekday names out ("mon" → "Monday").
func dayNamesLong(short []any) []string {
	out := make([]string, 0, len(short))
	for _, d := range short {
		if i := slices.Index(weekdayNames, d.(string)); i >= 0 {
			out = append(out, time.Weekday(i).String())
		}
	}
	return out
}

// midSentence lower-cases the first letter of a description so it can
// continue a sentence ("… also calls x when y changes").
func midSentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsUpper(r) {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// OutcomeSentence says how a run ended, as a person would: "The run
// succeeded.", "The run failed: <reason>." An error that repeats the
// status ("throttled: …") is not prefixed twice.
func OutcomeSentence(status, errText string) string {
	said := "ended with status " + strings.ReplaceAll(status, "_", " ")
	if si, ok := LookupStatus(RunStatuses, status); ok && si.Said != "" {
		said = si.Said
	}
	s := "The run " + said
	if errText = strings.TrimSuffix(strings.TrimPrefix(errText, status+": "), "."); errText != "" {
		s += ": " + errText
	}
	return s + "."
}

// StepSentence says how a step ended: `Step "on" failed: <reason>.`
func StepSentence(id, status, errText string) string {
	said := "ended with status " + strings.ReplaceAll(status, "_", " ")
	if si, ok := LookupStatus(StepStatuses, status); ok && si.Said != "" {
		said = si.Said
	}
	s := "Step " + strconv.Quote(id) + " " + said
	if errText = strings.TrimSuffix(errText, "."); errText != "" {
		s += ": " + errText
	}
	return s + "."
}
