package core

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// jkind is the JSON type of a parsed value.
type jkind uint8

const (
	jNull jkind = iota
	JBool
	JNum
	JStr
	JArr
	JObj
)

func (k jkind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// jnode is one JSON value with the JSON Pointer it sits at. The program
// decoder works on this tree rather than on encoding/json's output so that
// every finding can name its exact location, and so that size, depth and
// time are bounded while parsing attacker-controlled text (spec §10.1).
type Jnode struct {
	Kind jkind
	Ptr  string
	B    bool
	Num  float64
	Str  string
	Keys []string // object member names, in document order
	Vals []*Jnode // object member values or array elements
}

// get returns the member named key of an object node.
func (n *Jnode) Get(key string) *Jnode {
	for i, k := range n.Keys {
		if k == key {
			return n.Vals[i]
		}
	}
	return nil
}

// value converts the node to the plain Go value encoding/json would give.
func (n *Jnode) Value() any {
	switch n.Kind {
	case JBool:
		return n.B
	case JNum:
		return n.Num
	case JStr:
		return n.Str
	case JArr:
		out := make([]any, len(n.Vals))
		for i, v := range n.Vals {
			out[i] = v.Value()
		}
		return out
	case JObj:
		out := make(map[string]any, len(n.Keys))
		for i, k := range n.Keys {
			out[k] = n.Vals[i].Value()
		}
		return out
	}
	return nil
}

// jsonSyntaxError is a syntax error at a byte offset of the document.
type JsonSyntaxError struct {
	Off int
	Msg string
}

func (e *JsonSyntaxError) Error() string { return e.Msg }

// limitError is a validation bound exceeded while parsing or checking.
type InputLimitError struct{ Msg string }

func (e *InputLimitError) Error() string { return e.Msg }

type jparser struct {
	src      []byte
	pos      int
	nodes    int
	maxNodes int
	maxDepth int
	deadline time.Time
	dups     []string // pointers of duplicated object members
}

// parseJSON parses src into a jnode tree.
func ParseJSON(src []byte, maxNodes, maxDepth int, deadline time.Time) (*Jnode, []string, error) {
	p := &jparser{src: src, maxNodes: maxNodes, maxDepth: maxDepth, deadline: deadline}
	p.ws()
	n, err := p.value("", 0)
	if err != nil {
		return nil, nil, err
	}
	p.ws()
	if p.pos < len(p.src) {
		return nil, nil, p.errf("unexpected %s after the top-level value", p.what())
	}
	return n, p.dups, nil
}

func (p *jparser) errf(format string, args ...any) error {
	return &JsonSyntaxError{Off: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *jparser) what() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.src[p.pos:])
	return strconv.QuoteRune(r)
}

func (p *jparser) ws() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jparser) value(ptr string, depth int) (*Jnode, error) {
	p.nodes++
	if p.nodes > p.maxNodes {
		return nil, &InputLimitError{fmt.Sprintf("program has more than %d JSON values", p.maxNodes)}
	}
	if depth > p.maxDepth {
		return nil, &InputLimitError{fmt.Sprintf("program nests JSON deeper than %d levels", p.maxDepth)}
	}
	if p.nodes%256 == 0 && !p.deadline.IsZero() && time.Now().After(p.deadline) {
		return nil, &InputLimitError{"validation exceeded its wall-time bound"}
	}
	if p.pos >= len(p.src) {
		return nil, p.errf("unexpected end of input, want a value")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(ptr, depth)
	case c == '[':
		return p.array(ptr, depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &Jnode{Kind: JStr, Ptr: ptr, Str: s}, nil
	case c == 't' || c == 'f' || c == 'n':
		return p.literal(ptr)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(ptr)
	}
	return nil, p.errf("unexpected %s, want a value", p.what())
}

func (p *jparser) literal(ptr string) (*Jnode, error) {
	for _, lit := range []struct {
		text string
		node Jnode
	}{{"true", Jnode{Kind: JBool, B: true}}, {"false", Jnode{Kind: JBool}}, {"null", Jnode{Kind: jNull}}} {
		if strings.HasPrefix(string(p.src[p.pos:min(len(p.src), p.pos+5)]), lit.text) {
			p.pos += len(lit.text)
			n := lit.node
			n.Ptr = ptr
			return &n, nil
		}
	}
	return nil, p.errf("unexpected %s, want a value", p.what())
}

func (p *jparser) number(ptr string) (*Jnode, error) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if digits() == 0 {
		return nil, p.errf("bad number: want a digit")
	}
	if p.src[intStart] == '0' && p.pos-intStart > 1 {
		p.pos = intStart + 1
		return nil, p.errf("bad number: leading zero")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errf("bad number: want a digit after '.'")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errf("bad number: want a digit in the exponent")
		}
	}
	f, err := strconv.ParseFloat(string(p.src[start:p.pos]), 64)
	if err != nil {
		p.pos = start
		return nil, p.errf("number out of range")
	}
	return &Jnode{Kind: JNum, Ptr: ptr, Num: f}, nil
}

func (p *jparser) object(ptr string, depth int) (*Jnode, error) {
	p.pos++ // {
	n := &Jnode{Kind: JObj, Ptr: ptr}
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return n, nil
	}
	for {
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errf("unexpected %s, want a member name in double quotes", p.what())
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errf("unexpected %s, want ':' after member name", p.what())
		}
		p.pos++
		p.ws()
		child := ptr + "/" + EscapePtr(key)
		v, err := p.value(child, depth+1)
		if err != nil {
			return nil, err
		}
		if n.Get(key) != nil {
			p.dups = append(p.dups, child)
		} else {
			n.Keys = append(n.Keys, key)
			n.Vals = append(n.Vals, v)
		}
		p.ws()
		if p.pos >= len(p.src) {
			return nil, p.errf("unexpected end of input, want ',' or '}'")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return n, nil
		default:
			return nil, p.errf("unexpected %s, want ',' or '}'", p.what())
		}
	}
}

func (p *jparser) array(ptr string, depth int) (*Jnode, error) {
	p.pos++ // [
	n := &Jnode{Kind: JArr, Ptr: ptr}
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return n, nil
	}
	for {
		p.ws()
		v, err := p.value(ptr+"/"+strconv.Itoa(len(n.Vals)), depth+1)
		if err != nil {
			return nil, err
		}
		n.Vals = append(n.Vals, v)
		p.ws()
		if p.pos >= len(p.src) {
			return nil, p.errf("unexpected end of input, want ',' or ']'")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return n, nil
		default:
			return nil, p.errf("unexpected %s, want ',' or ']'", p.what())
		}
	}
}

// str reads a string literal starting at the opening quote.
func (p *jparser) str() (string, error) {
	p.pos++ // "
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '"' {
			s := p.src[start:p.pos]
			p.pos++
			if !utf8.Valid(s) {
				return strings.ToValidUTF8(string(s), "\uFFFD"), nil
			}
			return string(s), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errf("control character in string (escape it)")
		}
		p.pos++
	}
	var b strings.Builder
	b.Write(p.src[start:p.pos])
	return p.strEscaped(&b)
}

// strEscaped reads the rest of a string literal that has escapes into b.
func (p *jparser) strEscaped(b *strings.Builder) (string, error) {
	for {
		if p.pos >= len(p.src) {
			return "", p.errf("unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return strings.ToValidUTF8(b.String(), "\uFFFD"), nil
		case c < 0x20:
			return "", p.errf("control character in string (escape it)")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		p.pos++ // backslash
		if p.pos >= len(p.src) {
			return "", p.errf("unterminated string")
		}
		if err := p.escape(b); err != nil {
			return "", err
		}
	}
}

// escape reads the escape after a backslash into b.
func (p *jparser) escape(b *strings.Builder) error {
	e := p.src[p.pos]
	p.pos++
	switch e {
	case '"', '\\', '/':
		b.WriteByte(e)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, err := p.hex4()
		if err != nil {
			return err
		}
		b.WriteRune(p.surrogatePair(r))
	default:
		p.pos--
		return p.errf("bad escape \\%c in string", e)
	}
	return nil
}

// surrogatePair completes r with the low surrogate escape that follows,
// when r is a high one and one follows; else it is r.
func (p *jparser) surrogatePair(r rune) rune {
	if !utf16.IsSurrogate(r) || p.pos+6 > len(p.src) || p.src[p.pos] != '\\' || p.src[p.pos+1] != 'u' {
		return r
	}
	save := p.pos
	p.pos += 2
	if r2, err := p.hex4(); err == nil {
		if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
			return d
		}
	}
	p.pos = save
	return r
}

func (p *jparser) hex4() (rune, error) {
	if p.pos+4 > len(p.src) {
		return 0, p.errf("bad \\u escape: want 4 hex digits")
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errf("bad \\u escape: want 4 hex digits")
	}
	p.pos += 4
	return rune(v), nil
}

// escapePtr escapes one JSON Pointer reference token (RFC 6901).
func EscapePtr(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// lineCol converts a byte offset in src to a 1-based line and column
// (columns count runes).
func LineCol(src []byte, off int) (int, int) {
	off = min(max(off, 0), len(src))
	line, col := 1, 1
	for _, r := range string(src[:off]) {
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
