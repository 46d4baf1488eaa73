package model

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/internal/jinja"
)

// Template is a compiled Home Assistant template (value, availability or
// command template), rendered by internal/jinja within a work budget. It
// is compiled once, when discovery arrives, and rendered per message. A
// template the interpreter cannot compile (an unknown filter, function or
// statement, a syntax error) is unsupported: the state or command it feeds
// says why and is never guessed; one that fails to render (over its
// budget, say) leaves its state as it was, with the reason in its note.
//
// github.com/nikolalohinski/gonja/v2 (v2.9.1) was evaluated first and not
// adopted: templates come from whoever may publish discovery, and with
// gonja {{ 'a' * -1 }} panics (strings.Repeat), a recursive macro
// overflows the stack (fatal, not recoverable), {{ 'ab' * 100000000 }}
// and {{ value | center(300000000) }} make hundreds of MB in a second
// through built-in operators no hook reaches (docs/performance.md), and range() leaks a
// goroutine whenever a loop stops early; it prints JSON integers as
// floats ("5.0"), lacks Home Assistant's filters, reads include/import
// through a file system loader unless replaced, and costs more per
// message (figures in the commit that adopted the interpreter).
type Template struct {
	Prog        *jinja.Template
	Unsupported string
}

// MsgJBudget is the work all the renderings one message triggers may do
// together (each costs at least routeCost): 1,000 discovery configs
// sharing one state topic, each looping within jinja.DefaultBudget (2^18
// then), made every 10-byte message cost ~1 s of CPU. Renderings past it
// are skipped (errMsgBudget): their states keep their values, and Refusals
// counts them.
//
// A rendering is charged, before it is done, what it costs beyond its
// template's own operations: its route (jRouteCost) and the change it may
// make, committed and handed to every subscriber (ChangeCost each, and one
// for the commit). Cheap templates on a shared topic (1,000 sensors of
// {{ value_json.vN }}) otherwise cost the house far more than they were
// charged, never met the work per second, and held back every rule.
const (
	MsgJBudget = 1 << 20
	jRouteCost = 16
	ChangeCost = 16
)

// routeCost is what a rendering is charged besides its template's work.
func (tx *Rec) routeCost() int { return jRouteCost + ChangeCost*(1+tx.Fanout) }

var (
	ErrNoValue = errors.New("template path not present in payload")
	// ErrMsgBudget: the message's work budget (MsgJBudget) is spent.
	ErrMsgBudget = errors.New("template not rendered: the renderings of this message used up its work budget")
	// unreadRate is made (and boxed) once: a throttled topic's every
	// route says it.
	unreadRate any = "the latest message was not read (the value is the one before): " + errRate.Error()
)

// NotRendered reports whether err is a rendering the work budget did not
// cover (of the message or per second): counted and logged by the catalog,
// not a template's failure.
func NotRendered(err error) bool { return errors.Is(err, ErrMsgBudget) || errors.Is(err, errRate) }

func CompileTemplate(src string) *Template {
	if strings.TrimSpace(src) == "" {
		return nil
	}
	prog, err := jinja.Compile(src)
	if err != nil {
		return &Template{Unsupported: "template " + strconv.Quote(truncate(src, 60)) + ": " + err.Error()}
	}
	return &Template{Prog: prog}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Render applies a value template to a payload: value is the payload text,
// value_json its JSON (undefined when it is not JSON). The result is the
// rendered text, stripped, as Home Assistant has it; a nil template is the
// payload itself. errNoValue: the template printed only undefined values
// (a key the payload lacks).
func (t *Template) Render(payload []byte, now time.Time) (any, error) {
	return t.renderJSON(payload, now, nil)
}

// RenderMsg is render for a message of the state (or event, or
// availability) id: the routes of one topic share one decoding of its
// payload. A failure is counted and named in Refusals.
func (t *Template) RenderMsg(tx *Rec, id string, payload []byte) (any, error) {
	v, err := t.renderJSON(payload, tx.Now, tx)
	if errors.Is(err, errRate) {
		tx.Ops = append(tx.Ops, Op{Kind: OpUnread, ID: id, V: unreadRate})
	}
	if err != nil && !errors.Is(err, ErrNoValue) && !errors.Is(err, ErrMsgBudget) && !errors.Is(err, errRate) {
		tx.Refused.Failed.Add(1)
		why := id + ": " + err.Error()
		tx.Refused.LastFailure.Store(&why)
		tx.unread(id, "the latest message could not be read (the value is the one before): "+err.Error())
	}
	return v, err
}

func (t *Template) renderJSON(payload []byte, now time.Time, tx *Rec) (any, error) {
	budget := jinja.DefaultBudget
	if tx != nil {
		cost := tx.routeCost()
		if tx.JLeft < cost {
			return nil, tx.skipRender()
		}
		tx.JLeft -= cost
		budget = min(budget, tx.JLeft)
	}
	if t == nil {
		return tx.valueText(payload), nil
	}
	if t.Unsupported != "" {
		return nil, errors.New(t.Unsupported)
	}
	in := jinja.Input{Value: tx.valueText(payload), Now: now}
	if t.Prog.UsesJSON() {
		in.JSON = tx.valueJSON(payload)
	}
	res, err := t.Prog.Render(in, budget)
	if tx != nil {
		tx.JLeft -= res.Spent
		if errors.Is(err, jinja.ErrBudget) && budget < jinja.DefaultBudget {
			return nil, tx.skipRender()
		}
	}
	if err != nil {
		return nil, err
	}
	if res.Text == "" && res.Undef {
		return nil, ErrNoValue
	}
	return res.Text, nil
}

// valueText is the payload as text, made once per message when tx is not
// nil: a copy per rendering made every route of a topic cost its payload's
// bytes (1,000 routes on a 12.8 KB payload: 12.8 MB per message).
func (tx *Rec) valueText(p []byte) string {
	if tx == nil || len(p) == 0 {
		return string(p)
	}
	if tx.textOf != &p[0] || len(tx.text) != len(p) {
		tx.textOf, tx.text = &p[0], string(p)
	}
	return tx.text
}

// Forget drops what the message's payload was decoded to (the next
// message's buffer may be at the same address).
func (tx *Rec) Forget() {
	tx.JSONOf, tx.JSONVal, tx.textOf, tx.text = nil, nil, nil, ""
}

// valueJSON decodes a payload for value_json (undefined when it is not
// JSON), once per message when tx is not nil.
func (tx *Rec) valueJSON(p []byte) any {
	if tx != nil && len(p) > 0 && tx.JSONOf == &p[0] && tx.jsonLen == len(p) {
		return tx.JSONVal
	}
	v := jinja.ValueJSON(p)
	if tx != nil && len(p) > 0 {
		tx.JSONOf, tx.jsonLen, tx.JSONVal = &p[0], len(p), v
	}
	return v
}

// RenderCommand renders a command template with value (and the
// component's other variables); without a template the payload is value
// as Python prints it.
func (t *Template) RenderCommand(value any, vars map[string]any) (string, error) {
	if t == nil {
		return jinja.Str(value), nil
	}
	if t.Unsupported != "" {
		return "", errors.New(t.Unsupported)
	}
	res, err := t.Prog.Render(jinja.Input{Value: value, JSON: jinja.NoJSON, Vars: vars}, jinja.DefaultBudget)
	return res.Text, err
}

// toF reads a number from a template value or a command's input (JSON
// numbers, bools as 0 and 1).
func toF(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// PyNumber is a number as Home Assistant hands it to a command: an int
// when it is integral, else a float.
func PyNumber(v any) any {
	f, ok := toF(v)
	if !ok {
		return v
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int(f)
	}
	return f
}

// PyRoundInt is a number rounded half to even to an int (brightness and
// colour temperature are ints in Home Assistant).
func PyRoundInt(v any) any {
	if f, ok := toF(v); ok && math.Abs(f) < 1<<53 {
		return int(math.RoundToEven(f))
	}
	return v
}

// PyFloatValue is a number as a Python float (climate temperatures).
func PyFloatValue(v any) any {
	if f, ok := toF(v); ok {
		return f
	}
	return v
}

func ToFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// Stringify renders a value the way a payload comparison needs it.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// skipRender counts a rendering the message's work budget, or the work
// budget per second (jRated), did not cover.
func (tx *Rec) skipRender() error {
	if tx.JRated {
		tx.JThrottled++
		tx.Refused.Throttled.Add(1)
		return errRate
	}
	tx.JSkipped++
	tx.Refused.Skipped.Add(1)
	return ErrMsgBudget
}
