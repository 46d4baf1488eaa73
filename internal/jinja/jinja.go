// Package jinja renders Home Assistant templates (Jinja as Home Assistant
// renders value, availability and command templates) written by whoever may
// publish MQTT discovery: Compile checks a template once, Render runs it
// per message within a work budget.
//
// # Budget model
//
// A rendering is given a budget of work units (Render's budget argument;
// DefaultBudget is the most one rendering should get). One unit pays for
// one of:
//   - evaluating one node of the template (a name, a literal, an operator,
//     a call, one loop iteration);
//   - visiting one item of a value in a walk: equality, ordering, `in`,
//     sort, unique, dict building and look-ups, printing, JSON;
//   - making one list item, or BytesPerUnit bytes of a string (printing and
//     JSON included), or scanning BytesPerUnit bytes of a string;
//   - compiling a regular expression that is not cached, by the size of
//     the program it compiles to (estimated before it compiles); matching
//     one, by the bytes it scans times that size; and each match found,
//     by the bitmap regexp clears to look for it.
//
// Every operation charges before it makes its result or starts its walk,
// so a rendering that would exceed its budget fails with ErrBudget having
// made no more than it paid for: the time and memory of one rendering are
// proportional to its budget, whatever the template.
//
// Beside the budget, fixed limits bound any one thing: MaxValue (the bytes
// of a string or of the output, the items of a list), MaxDepth (the nesting
// of a value any walk descends, so no recursion outgrows it; a namespace
// that holds itself prints as Python prints it, {...}), MaxNesting (brackets
// and operators nested in the source), MaxTemplateLen (the source),
// MaxRange (range()), and, for each template's cache of compiled patterns,
// MaxPatternLen, MaxPatterns and MaxPatternBytes (Compile compiles a
// template's literal patterns into it within one DefaultBudget). A
// rendering that exceeds one fails with ErrSize, ErrDepth or ErrBudget
// (test with errors.Is); a panic (a bug) is an error too.
package jinja

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The limits of the budget model (see the package comment).
const (
	// DefaultBudget is the work one rendering may do. Real templates
	// (devices/testdata, the captures in mqtt-real) spend at most a few
	// dozen units.
	DefaultBudget = 1 << 16
	// BytesPerUnit is how many bytes one unit pays for.
	BytesPerUnit = 16
	// MaxValue bounds a string (bytes), a list (items) and the output.
	MaxValue = 64 << 10
	// MaxDepth bounds how deep a walk descends into a value; JSON payloads
	// deeper than this are not decoded.
	MaxDepth = 128
	// MaxNesting bounds the nesting of brackets, operators and statements
	// in the source.
	MaxNesting = 64
	// MaxTemplateLen bounds a template's source: discovery payloads are
	// small, and compiling costs in proportion to the source.
	MaxTemplateLen = 16 << 10
	// MaxRange bounds range(): Jinja's sandbox stops at 100,000; a value
	// template needs far less.
	MaxRange = 10000
	// MaxPatternLen bounds one regular expression's source.
	MaxPatternLen = 512
	// MaxPatterns and MaxPatternBytes bound a template's cache of compiled
	// patterns (count, and the sum of their compiled sizes); patterns
	// beyond it are compiled, and charged, each time they are used.
	MaxPatterns     = 16
	MaxPatternBytes = 256 << 10
)

var (
	// ErrBudget: the rendering needs more work than its budget.
	ErrBudget = errors.New("template needs too much work")
	// ErrSize: a string, list or the output would exceed MaxValue.
	ErrSize = fmt.Errorf("template value longer than %d", MaxValue)
	// ErrDepth: a value is nested deeper than MaxDepth.
	ErrDepth = fmt.Errorf("template value nested deeper than %d", MaxDepth)
)

// Input is what one rendering reads.
type Input struct {
	Value any            // value: the payload text, or a command's value
	JSON  any            // value_json: ValueJSON's result, or NoJSON
	Vars  map[string]any // further variables (a command's position, …)
	Now   time.Time      // now() and utcnow(); the zero time reads the clock
}

// NoJSON is value_json where there is no payload to read it from.
var NoJSON any = undefinedValue{name: "value_json"}

// Result is a rendering's output.
type Result struct {
	Text  string // stripped, as Home Assistant strips it
	Undef bool   // an undefined value was printed (a key the payload lacks)
	Spent int    // the budget units used
}

// ValueJSON decodes a payload for value_json, as Python's json.loads reads
// it; a payload that is not JSON makes value_json undefined.
func ValueJSON(payload []byte) any {
	v, err := decodeJSON(payload)
	if err != nil {
		return NoJSON
	}
	return v
}

// UsesJSON reports whether the template reads value_json (so a caller can
// skip decoding the payload).
func (t *Template) UsesJSON() bool { return t.usesJSON }

// Render runs the template on in within budget units of work (see the
// package comment). A panic (a bug: templates are untrusted) is an error,
// not a crash.
func (t *Template) Render(in Input, budget int) (res Result, err error) {
	s := state{budget: budget, value: in.Value, json: in.JSON, vars: in.Vars, now: in.Now, program: t}
	defer func() {
		if r := recover(); r != nil {
			res, err = Result{}, fmt.Errorf("template failed: %v", r)
		}
		res.Spent = budget - max(s.budget, 0)
	}()
	text, err := t.render(&s)
	if err != nil {
		return Result{}, err
	}
	return Result{Text: strings.TrimSpace(text), Undef: s.undef}, nil
}

// Str is Python's str() of a value within MaxValue bytes (longer prints
// are cut, and deeper ones print "...").
func Str(v any) string {
	p := printer{limit: MaxValue, cut: true}
	p.str(v)
	return p.string()
}
