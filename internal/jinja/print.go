package jinja

import (
	"encoding/json"
	"sort"
	"strconv"
	"unicode/utf8"
)

// printer writes values as Python's str() and repr() and as JSON do,
// within a byte limit and MaxDepth. With a state it charges every item it
// visits and every byte before writing it; without one (brief texts for
// error messages) it stops quietly at its limit. It is the one walk that
// prints, so no printing path restarts its depth count.
type printer struct {
	b     []byte
	limit int
	s     *state
	cut   bool         // at the limit or MaxDepth: stop quietly, not fail
	depth int          // values entered
	open  []*namespace // namespaces being printed: Python's repr prints a cycle as {...}
	err   error
}

func (p *printer) string() string {
	if p.cut && p.err != nil {
		return string(p.b) + "..."
	}
	return string(p.b)
}

// write appends str if the limit and the budget allow.
func (p *printer) write(str string) {
	if p.grow(len(str)) {
		p.b = append(p.b, str...)
	}
}

// enter charges one item visited and descends one level; leave returns.
func (p *printer) enter() bool {
	if p.err != nil {
		return false
	}
	if p.depth++; p.depth > MaxDepth {
		p.err = ErrDepth
		return false
	}
	if p.s != nil {
		p.err = p.s.spend(1)
	}
	return p.err == nil
}

func (p *printer) leave() { p.depth-- }

// str writes Python's str() of v.
func (p *printer) str(v any) {
	if !p.enter() {
		return
	}
	defer p.leave()
	switch x := v.(type) {
	case nil:
		p.write("None")
	case undefinedValue:
	case string:
		p.write(x)
	case bool:
		p.write(pyBoolStr(x))
	case int:
		p.write(strconv.Itoa(x))
	case float64:
		p.write(pyFloat(x))
	case json.Number:
		p.str(num(x))
	case boundMethod:
		p.write("<built-in method " + x.name + ">")
	case *namespace:
		p.namespace(x)
	case *loopVar:
		p.write("<LoopContext " + strconv.Itoa(x.i+1) + "/" + strconv.Itoa(x.n) + ">")
	case datetime:
		p.write(x.isoformat(" "))
	default:
		p.repr(v)
	}
}

func pyBoolStr(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// namespace prints Jinja's <Namespace {...}>; one already being printed is
// a cycle, which Python's dict repr prints as {...}.
func (p *printer) namespace(ns *namespace) {
	for _, o := range p.open {
		if o == ns {
			p.write("<Namespace {...}>")
			return
		}
	}
	p.open = append(p.open, ns)
	p.write("<Namespace ")
	p.repr(ns.m)
	p.write(">")
	p.open = p.open[:len(p.open)-1]
}

// repr writes Python's repr() of v.
func (p *printer) repr(v any) {
	if !p.enter() {
		return
	}
	defer p.leave()
	switch x := v.(type) {
	case string:
		p.quote(x)
	case []any:
		p.seq("[", "]", x)
	case tuple:
		if len(x) == 1 {
			p.write("(")
			p.repr(x[0])
			p.write(",)")
			return
		}
		p.seq("(", ")", x)
	case map[string]any:
		p.write("{")
		for i, k := range p.keys(x) {
			if i > 0 {
				p.write(", ")
			}
			p.quote(k)
			p.write(": ")
			p.repr(x[k])
		}
		p.write("}")
	case undefinedValue:
		p.write("Undefined")
	case *dict:
		p.write("{")
		for i, k := range x.keys {
			if i > 0 {
				p.write(", ")
			}
			p.repr(k)
			p.write(": ")
			p.repr(x.vals[i])
		}
		p.write("}")
	default:
		p.str(v)
	}
}

func (p *printer) seq(open, close string, xs []any) {
	p.write(open)
	for i, it := range xs {
		if p.err != nil {
			return
		}
		if i > 0 {
			p.write(", ")
		}
		p.repr(it)
	}
	p.write(close)
}

// keys sorts a JSON object's keys, charged as items made.
func (p *printer) keys(m map[string]any) []string {
	if p.err != nil {
		return nil
	}
	if p.s != nil {
		if p.err = p.s.spendItems(len(m)); p.err != nil {
			return nil
		}
	}
	return sortedKeys(m)
}

// quote writes s quoted as Python's repr does; the quoted length is
// counted before anything is made.
func (p *printer) quote(s string) {
	if p.err != nil {
		return
	}
	q := byte('\'')
	if containsByte(s, '\'') && !containsByte(s, '"') {
		q = '"'
	}
	n := 2
	for _, r := range s {
		if e := quoteEsc(r, q); e != "" {
			n += len(e)
		} else {
			n += utf8.RuneLen(r)
		}
	}
	if !p.grow(n) {
		return
	}
	p.b = append(p.b, q)
	for _, r := range s {
		if e := quoteEsc(r, q); e != "" {
			p.b = append(p.b, e...)
		} else {
			p.b = utf8.AppendRune(p.b, r)
		}
	}
	p.b = append(p.b, q)
}

// grow checks and charges n bytes about to be appended.
func (p *printer) grow(n int) bool {
	if p.err != nil {
		return false
	}
	if len(p.b)+n > p.limit {
		p.err = ErrSize
		return false
	}
	if p.s != nil {
		p.err = p.s.spendBytes(n)
	}
	return p.err == nil
}

// quoteEsc is the escape of one character inside a Python string literal,
// "" when it stands as it is.
func quoteEsc(r rune, q byte) string {
	switch {
	case r == '\\':
		return `\\`
	case r == rune(q) && q == '"':
		return `\"`
	case r == rune(q):
		return `\'`
	case r == '\n':
		return `\n`
	case r == '\t':
		return `\t`
	case r == '\r':
		return `\r`
	case r < 0x20 || r == 0x7f:
		return `\x` + hexDigits[r>>4:r>>4+1] + hexDigits[r&15:r&15+1]
	}
	return ""
}

const hexDigits = "0123456789abcdef"

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// str is Python's str() of v within the budget and MaxValue.
func (s *state) str(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int:
		return strconv.Itoa(x), s.spend(1)
	case float64:
		return pyFloat(x), s.spend(1)
	case bool:
		return pyBoolStr(x), s.spend(1)
	case nil:
		return "None", s.spend(1)
	case undefinedValue:
		return "", nil
	}
	p := printer{limit: MaxValue, s: s}
	p.str(v)
	return string(p.b), p.err
}

// repr is Python's repr() of v within the budget and MaxValue.
func (s *state) repr(v any) (string, error) {
	p := printer{limit: MaxValue, s: s}
	p.repr(v)
	return string(p.b), p.err
}

// briefLen bounds the values quoted in error messages.
const briefLen = 80

// brief is repr(v) for an error message: short, and free.
func brief(v any) string {
	p := printer{limit: briefLen, cut: true}
	p.repr(v)
	return p.string()
}

// pyQuote is repr() of a name or message text from the source (bounded by
// MaxTemplateLen), for error messages.
func pyQuote(s string) string {
	p := printer{limit: MaxTemplateLen + 2, cut: true}
	p.quote(s)
	return p.string()
}
