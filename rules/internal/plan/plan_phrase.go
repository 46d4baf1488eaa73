package plan

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The phrasing helpers plans, narrations and pages share, so that what
// people read is a sentence a person would write: "2 triggers" not
// "2 trigger(s)", "a, b and c" not "a, b, c", "5 minutes" not "5m0s".

// every is "every " plus a duration, without a lone leading 1: "every
// hour", "every 5 minutes", "every 1 hour and 30 minutes".
func Every(d time.Duration) string {
	s := clock.HumanDuration(d)
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
func durationText(ds *model.DurSpec) string {
	if ds.Constant {
		return clock.HumanDuration(ds.D)
	}
	return templateText(ds.T)
}

// midSentence lower-cases the first letter of a description so it can
// continue a sentence ("… also calls x when y changes").
func MidSentence(s string) string {
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
	if si, ok := core.LookupStatus(core.RunStatuses, status); ok && si.Said != "" {
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
	if si, ok := core.LookupStatus(core.StepStatuses, status); ok && si.Said != "" {
		said = si.Said
	}
	s := "Step " + strconv.Quote(id) + " " + said
	if errText = strings.TrimSuffix(errText, "."); errText != "" {
		s += ": " + errText
	}
	return s + "."
}
