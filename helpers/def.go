// Package helpers owns the household's own state entries (vacation mode,
// a counter, a kitchen timer): their definitions, values, actions and
// persistence, served in the live catalog like a device's.
package helpers

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pilothouse/pilothouse/internal/shown"
)

// Kind is one kind of helper.
type Kind string

// The kinds of helpers (Home Assistant's input_boolean, input_number,
// input_select, input_text, input_datetime, counter and timer).
const (
	Flag     Kind = "flag"
	Number   Kind = "number"
	Choice   Kind = "choice"
	Text     Kind = "text"
	DateTime Kind = "datetime"
	Counter  Kind = "counter"
	Timer    Kind = "timer"
)

// Kinds is the closed set of helper kinds with what each holds and the
// definition fields it takes beside id, name, kind, area and tags.
var Kinds = []struct {
	Kind   Kind
	Doc    string
	Fields string
}{
	{Flag, "on or off (true/false): turn_on, turn_off, toggle, set", "initial"},
	{Number, "a number within min..max (step, unit): set, increment, decrement", "min max step unit initial"},
	{Choice, "one of its options: select, next, previous", "options initial"},
	{Text, "a text of at most max_length characters: set", "max_length initial"},
	{DateTime, "a date, a time of day or both (mode date, time or datetime): set", "mode initial"},
	{Counter, "a whole number from initial, within min..max, by step: increment, decrement, reset, set", "min max step initial"},
	{Timer, "counts down a duration: start, pause, cancel, finish; events finished and cancelled", "duration"},
}

// refuses says whether kind k is known and its definition does not take
// field f.
func refuses(k Kind, f string) bool {
	for _, row := range Kinds {
		if row.Kind == k {
			return !slices.Contains(strings.Fields(row.Fields), f)
		}
	}
	return false
}

// Def is a helper's definition, as the configuration file, MCP and the
// web UI give it.
type Def struct {
	ID   string   `json:"id" yaml:"id"`
	Name string   `json:"name,omitempty" yaml:"name"`
	Kind Kind     `json:"kind" yaml:"kind"`
	Area string   `json:"area,omitempty" yaml:"area"`
	Tags []string `json:"tags,omitempty" yaml:"tags"`
	// Number and counter.
	Min  *float64 `json:"min,omitempty" yaml:"min"`
	Max  *float64 `json:"max,omitempty" yaml:"max"`
	Step *float64 `json:"step,omitempty" yaml:"step"` // nil: 1
	Unit string   `json:"unit,omitempty" yaml:"unit"`
	// Choice.
	Options []string `json:"options,omitempty" yaml:"options"`
	// Text.
	MaxLength int `json:"max_length,omitempty" yaml:"max_length"`
	// DateTime: "date", "time" or "datetime" (default).
	Mode string `json:"mode,omitempty" yaml:"mode"`
	// Timer: the default duration of start ("PT10M", "10m").
	Duration string `json:"duration,omitempty" yaml:"duration"`
	// Initial is the value a new helper starts with (a counter's reset
	// value too); nil: off, min or 0, the first option, "", unset.
	Initial any `json:"initial,omitempty" yaml:"initial"`
}

// Limits on definitions: a helper is small household state.
const (
	maxOptions   = 64
	maxOptionLen = 100
	maxTextLen   = 1024
	maxTags      = 16
	maxNameLen   = 100
	maxTimer     = 31 * 24 * time.Hour
	// minTimer keeps a rule that restarts its timer on finished from
	// looping a thousand times a second through the logbook.
	minTimer      = time.Second
	defaultTextLn = 255
)

var idRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// reservedIDs are first segments the catalog gives other meanings.
var reservedIDs = []string{"automation", "notify", "helper", "helpers", "area", "type"}

// ErrInvalid marks a definition or an action argument that is refused.
var ErrInvalid = errors.New("invalid")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Normalize checks d and fills its defaults; the error names the member.
func (d *Def) Normalize() error {
	if !idRE.MatchString(d.ID) {
		return invalid("id %q: lowercase letters, digits and _ (starting with a letter, at most 64)", d.ID)
	}
	if slices.Contains(reservedIDs, d.ID) {
		return invalid("id %q is reserved", d.ID)
	}
	if d.Name == "" {
		// "vacation_mode" reads "Vacation mode", as Home Assistant names it.
		d.Name = strings.ToUpper(d.ID[:1]) + strings.ReplaceAll(d.ID[1:], "_", " ")
	}
	if err := hiddenChars(append([]string{d.Name, d.Unit}, append(d.Tags, d.Options...)...)); err != nil {
		return err
	}
	if len(d.Name) > maxNameLen || len(d.Area) > maxNameLen || len(d.Unit) > 16 {
		return invalid("name and area: at most %d bytes; unit: at most 16", maxNameLen)
	}
	if len(d.Tags) > maxTags {
		return invalid("tags: at most %d", maxTags)
	}
	for _, tag := range d.Tags {
		if tag == "" || len(tag) > maxNameLen || strings.ContainsAny(tag, " \t\n") {
			return invalid("tag %q: 1 to %d bytes, no spaces", tag, maxNameLen)
		}
		// The catalog writes these itself: a helper tagged type:lock would
		// join the lock selectors, area:x give it a second area.
		for _, p := range reservedTagPrefixes {
			if strings.HasPrefix(strings.ToLower(tag), p) {
				return invalid("tag %q: %s tags are the catalog's own (a helper's area is its area field)", tag, p)
			}
		}
	}
	if d.Area != "" && !idRE.MatchString(d.Area) {
		return invalid("area %q: lowercase letters, digits and _", d.Area)
	}
	if err := d.refusedFields(); err != nil {
		return err
	}
	switch d.Kind {
	case Flag:
		return d.checkInitial()
	case Number, Counter:
		return d.normalizeNumber()
	case Choice:
		return d.normalizeChoice()
	case Text:
		return d.normalizeText()
	case DateTime:
		return d.normalizeDateTime()
	case Timer:
		_, err := d.duration()
		return err
	case "":
		return invalid("kind is required (one of %s)", kindList())
	}
	return invalid("kind %q: one of %s", d.Kind, kindList())
}

func kindList() string {
	var out []string
	for _, k := range Kinds {
		out = append(out, string(k.Kind))
	}
	return strings.Join(out, ", ")
}

func (d *Def) normalizeNumber() error {
	if d.Kind == Number && (d.Min == nil || d.Max == nil) {
		return invalid("number helper: min and max are required")
	}
	for _, v := range []*float64{d.Min, d.Max} {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			return invalid("min and max must be finite")
		}
	}
	if d.Min != nil && d.Max != nil && *d.Min > *d.Max {
		return invalid("min %s is above max %s", num(*d.Min), num(*d.Max))
	}
	if d.Step == nil {
		d.Step = &one
	}
	if st := *d.Step; st <= 0 || math.IsNaN(st) || math.IsInf(st, 0) {
		return invalid("step must be a positive number, not %s", num(st))
	}
	if d.Kind == Counter {
		if err := d.countable(); err != nil {
			return err
		}
	}
	return d.checkInitial()
}

// one is the step of a number or counter that gives none.
var one = 1.0

// maxCount is the largest whole number a counter holds exactly (a float64's
// 2^53): past it, increment would leave the count where it was.
const maxCount = 1 << 53

// countable checks a counter's step and bounds are whole numbers it can
// count exactly.
func (d *Def) countable() error {
	if *d.Step != math.Trunc(*d.Step) || *d.Step > maxCount {
		return invalid("counter helper: step is a whole number from 1 to %d, not %s", int64(maxCount), num(*d.Step))
	}
	for _, v := range []*float64{d.Min, d.Max} {
		if v != nil && math.Abs(*v) > maxCount {
			return invalid("counter helper: min and max within ±%d (a larger count is not exact)", int64(maxCount))
		}
	}
	return nil
}

// given are the definition fields d sets, by the names Kinds uses.
func (d *Def) given() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"min", d.Min != nil}, {"max", d.Max != nil}, {"step", d.Step != nil}, {"unit", d.Unit != ""},
		{"options", len(d.Options) > 0}, {"max_length", d.MaxLength != 0}, {"mode", d.Mode != ""},
		{"duration", d.Duration != ""}, {"initial", d.Initial != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// refusedFields refuses a field d's kind does not take (a unit on a
// choice would be dropped without a word).
func (d *Def) refusedFields() error {
	for _, f := range d.given() {
		if refuses(d.Kind, f) {
			return invalid("%s helper: %s is not one of its fields (%s)", d.Kind, f, fieldsOf(d.Kind))
		}
	}
	return nil
}

// fieldsOf lists the definition fields kind k takes.
func fieldsOf(k Kind) string {
	for _, row := range Kinds {
		if row.Kind == k {
			return strings.ReplaceAll(row.Fields, " ", ", ")
		}
	}
	return ""
}

func (d *Def) normalizeChoice() error {
	if len(d.Options) == 0 || len(d.Options) > maxOptions {
		return invalid("choice helper: 1 to %d options", maxOptions)
	}
	seen := map[string]bool{}
	for _, o := range d.Options {
		if o == "" || len(o) > maxOptionLen || seen[o] {
			return invalid("choice helper: option %q is empty, longer than %d bytes or repeated", o, maxOptionLen)
		}
		seen[o] = true
	}
	return d.checkInitial()
}

func (d *Def) normalizeText() error {
	if d.MaxLength < 0 || d.MaxLength > maxTextLen {
		return invalid("text helper: max_length is 1..%d", maxTextLen)
	}
	if d.MaxLength == 0 {
		d.MaxLength = defaultTextLn
	}
	return d.checkInitial()
}

func (d *Def) normalizeDateTime() error {
	switch d.Mode {
	case "":
		d.Mode = "datetime"
	case "date", "time", "datetime":
	default:
		return invalid("datetime helper: mode is date, time or datetime, not %q", d.Mode)
	}
	return d.checkInitial()
}

// checkInitial checks the initial value against the kind's value checks.
func (d *Def) checkInitial() error {
	if d.Initial == nil {
		return nil
	}
	v, err := d.checkValue(d.Initial)
	if err != nil {
		return fmt.Errorf("initial: %w", err)
	}
	d.Initial = v
	return nil
}

// duration is a timer's default duration.
func (d *Def) duration() (time.Duration, error) {
	if d.Duration == "" {
		return 0, invalid("timer helper: duration is required (e.g. \"PT10M\")")
	}
	return parseDuration(d.Duration)
}

// reservedTagPrefixes are the tags the catalog makes from what a device
// is: type, area, device and source.
var reservedTagPrefixes = []string{"type:", "area:", "device:", "source:"}

// hiddenChars refuses a shown text with a character that is not shown as
// itself (internal/shown), bytes that are not UTF-8, or only blanks.
func hiddenChars(texts []string) error {
	for _, t := range texts {
		if !utf8.ValidString(t) {
			return invalid("%q is not UTF-8", t)
		}
		if shown.Blank(t) {
			return invalid("%q: a name or value must show something, not only blanks", t)
		}
		if r, hidden := shown.Hidden(t); hidden {
			return invalid("%q: character %U is not shown as itself (a control, direction, zero-width or blank mark)", t, r)
		}
	}
	return nil
}

// isoDuration is the ISO 8601 durations a timer takes: days, hours,
// minutes and seconds ("P1D", "PT1H30M", "PT90S").
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if m := isoDuration.FindStringSubmatch(s); m != nil && s != "P" && s != "PT" {
		v, err = 0, nil
		for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
			if m[i+1] != "" {
				f, _ := strconv.ParseFloat(m[i+1], 64)
				if f > 1e7 { // past any timer's bound: never overflow
					return 0, invalid("duration %q: at most %s", s, maxTimer)
				}
				v += time.Duration(f * float64(unit))
			}
		}
	}
	if err != nil {
		return 0, invalid("duration %q: an ISO 8601 duration (\"PT10M\") or Go's (\"10m\")", s)
	}
	if v < minTimer || v > maxTimer {
		return 0, invalid("duration %q: at least %s and at most %s", s, minTimer, maxTimer)
	}
	return v, nil
}
