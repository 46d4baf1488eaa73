package jinja

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
)

// Regular expressions (RE2: linear time whatever the pattern). Compiling
// is charged by the size of the program a pattern compiles to, estimated
// from its syntax tree before it is compiled; matching by the bytes
// scanned times that size; results by what they make, before they are
// made.

// regexCache keeps a template's compiled patterns: its literal patterns,
// compiled with the template, and dynamic ones while it has room (at most
// MaxPatterns patterns and MaxPatternBytes of estimated program size).
// Renderings of one template may run at once, hence the lock.
type regexCache struct {
	mu    sync.Mutex
	m     map[string]*pattern
	bytes int
}

// pattern is a compiled pattern, its estimated size in bytes and its
// program's instructions.
type pattern struct {
	re    *regexp.Regexp
	size  int
	insts int
}

var errPatternSize = errors.New("pattern too large")

// note compiles a literal pattern when the template is compiled, so that
// renderings find it cached, while the cache has room and the compile's
// budget lasts (s: one budget for all of a template's patterns); a pattern
// not noted is compiled when a rendering needs it, and charged to it.
func (c *regexCache) note(s *state, x expr) {
	lit, ok := x.(*literal)
	if !ok {
		return
	}
	p, ok := lit.v.(string)
	if !ok || s.budget <= 0 || c.full() {
		return
	}
	_, _ = c.get(s, p, false)
}

func (c *regexCache) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m) >= MaxPatterns
}

// get compiles a Python pattern: (?P<name>…) groups and the common escapes
// read the same in RE2; look-arounds and backreferences do not compile.
func (c *regexCache) get(s *state, src string, ignoreCase bool) (*pattern, error) {
	key := src
	if ignoreCase {
		key = "(?i)" + src
	}
	c.mu.Lock()
	p, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compilePattern(s, key)
	if err != nil {
		return nil, fmt.Errorf("pattern %s: %w", brief(src), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) < MaxPatterns && c.bytes+p.size <= MaxPatternBytes {
		if c.m == nil {
			c.m = map[string]*pattern{}
		}
		c.m[key] = p
		c.bytes += p.size
	}
	return p, nil
}

// compilePattern checks a pattern's length and estimated size, charges
// them, then compiles it.
func compilePattern(s *state, src string) (*pattern, error) {
	if len(src) > MaxPatternLen {
		return nil, fmt.Errorf("longer than %d bytes", MaxPatternLen)
	}
	if err := s.spend(len(src)*8 + 1); err != nil { // parsing makes about 128 bytes a byte
		return nil, err
	}
	tree, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	size := progSize(tree)
	if size > MaxPatternBytes {
		return nil, errPatternSize
	}
	if err := s.spend(2 * size / BytesPerUnit); err != nil { // compiled twice: here, and by regexp
		return nil, err
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	return &pattern{re: re, size: size, insts: len(prog.Inst)}, nil
}

// progSize estimates the bytes compiling a parsed pattern makes: a node,
// its literal runes and class ranges, times its repetitions (which
// compiling expands). It stops counting past MaxPatternBytes.
func progSize(re *syntax.Regexp) int {
	n := 96 + 128*len(re.Rune)
	if re.Op == syntax.OpCharClass {
		n = 96 + 16*len(re.Rune)
	}
	for _, sub := range re.Sub {
		n += progSize(sub)
		if n > MaxPatternBytes {
			return n
		}
	}
	if re.Op == syntax.OpRepeat {
		n *= max(re.Min, re.Max, 1)
	}
	return n
}

// scan charges matching p against str: every byte may step every
// instruction.
func (p *pattern) scan(s *state, str string) error {
	return s.spend((len(str)/BytesPerUnit + 1) * (1 + p.size/4096))
}

// regexOf compiles the pattern argument (from the cache when it is there)
// and charges the scan of the filtered value.
func regexOf(s *state, a []any, kw map[string]any, caseArg int, anchored bool) (*pattern, string, error) {
	str, err := s.str(a[0])
	if err != nil {
		return nil, "", err
	}
	find, err := strArg(s, a, kw, 1, "find", "")
	if err != nil {
		return nil, "", err
	}
	if anchored {
		find = `\A(?:` + find + `)`
	}
	ic := truthy(argOr(a, kw, caseArg, "ignorecase", false))
	p, err := s.program.regex.get(s, find, ic)
	if err != nil {
		return nil, "", err
	}
	return p, str, p.scan(s, str)
}

func regexFind(s *state, a []any, kw map[string]any, anchored bool) (any, error) {
	p, str, err := regexOf(s, a, kw, 2, anchored)
	if err != nil {
		return nil, err
	}
	return p.re.MatchString(str), nil
}

// backtrackBits is regexp's bound on the bitmap its backtracker clears
// for every match it looks for (instructions times input bytes).
const backtrackBits = 256 << 10

// clearedPerUnit is how many bytes of that bitmap one unit pays for
// clearing (clearing is cheaper than making).
const clearedPerUnit = 8 * BytesPerUnit

// matchCost is the units one match of p in str costs: a few ints made,
// and the backtracker's bitmap cleared (so a pattern that matches often
// in a long string (the empty pattern, say) costs in proportion to both).
func (p *pattern) matchCost(str string) int {
	return 2 + min(backtrackBits, p.insts*(len(str)+1))/8/clearedPerUnit
}

// matches finds the matches of p in str, at most as many as the budget
// can pay for (one more tells that there are more), so no more are made
// than are paid for.
func matches(s *state, p *pattern, str string) ([][]int, error) {
	cost := p.matchCost(str)
	afford := max(s.budget, 0) / cost
	ms := p.re.FindAllStringSubmatchIndex(str, min(afford, MaxValue)+1)
	if len(ms) > MaxValue {
		return nil, ErrSize
	}
	if err := s.spend(len(ms) * cost); err != nil {
		return nil, err
	}
	return ms, nil
}

func filterRegexReplace(s *state, a []any, kw map[string]any) (any, error) {
	p, str, err := regexOf(s, a, kw, 3, false)
	if err != nil {
		return nil, err
	}
	src, err := strArg(s, a, kw, 2, "replace", "")
	if err != nil {
		return nil, err
	}
	if err := s.spend(2*len(src)/BytesPerUnit + 1); err != nil { // parsing copies it, in parts
		return nil, err
	}
	repl := parseRepl(src, p.re)
	ms, err := matches(s, p, str)
	if err != nil {
		return nil, err
	}
	var out []byte
	last := 0
	for _, m := range ms {
		n := len(out) + m[0] - last + repl.size(str, m)
		if n > MaxValue {
			return nil, ErrSize
		}
		if err := s.spendBytes(n - len(out)); err != nil {
			return nil, err
		}
		out = append(out, str[last:m[0]]...)
		out = repl.expand(out, str, m)
		last = m[1]
	}
	if len(out)+len(str)-last > MaxValue {
		return nil, ErrSize
	}
	if err := s.spendBytes(len(str) - last); err != nil {
		return nil, err
	}
	return string(append(out, str[last:]...)), nil
}

// repl is a parsed replacement: literal text and group references
// (Python's \1 and \g<name>; a group that did not match is empty).
type repl []replPart

type replPart struct {
	lit   string
	group int // -1: lit
}

func parseRepl(r string, re *regexp.Regexp) repl {
	var out repl
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, replPart{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '\\' && i+1 < len(r) && isDigit(r[i+1]):
			flush()
			out = append(out, replPart{group: int(r[i+1] - '0')})
			i++
		case strings.HasPrefix(r[i:], `\g<`) && strings.IndexByte(r[i:], '>') > 0:
			end := i + strings.IndexByte(r[i:], '>')
			flush()
			out = append(out, replPart{group: groupIndex(re, r[i+3:end])})
			i = end
		default:
			lit.WriteByte(r[i])
		}
	}
	flush()
	return out
}

// groupIndex is a group's number from its name or digits; an unknown
// group is one that never matches.
func groupIndex(re *regexp.Regexp, name string) int {
	if i := re.SubexpIndex(name); i >= 0 {
		return i
	}
	n := 0
	for _, c := range []byte(name) {
		if !isDigit(c) || n > re.NumSubexp() {
			return 1 << 30
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func (r repl) group(str string, m []int, g int) string {
	if 2*g+1 >= len(m) || m[2*g] < 0 {
		return ""
	}
	return str[m[2*g]:m[2*g+1]]
}

// size is the length of one expansion, counted before it is made.
func (r repl) size(str string, m []int) int {
	n := 0
	for _, p := range r {
		if p.group < 0 {
			n += len(p.lit)
		} else {
			n += len(r.group(str, m, p.group))
		}
	}
	return n
}

func (r repl) expand(out []byte, str string, m []int) []byte {
	for _, p := range r {
		if p.group < 0 {
			out = append(out, p.lit...)
		} else {
			out = append(out, r.group(str, m, p.group)...)
		}
	}
	return out
}

// findall is Python's re.findall: strings, or tuples of the groups.
func findall(s *state, a []any, kw map[string]any) ([]any, error) {
	p, str, err := regexOf(s, a, kw, 2, false)
	if err != nil {
		return nil, err
	}
	ms, err := matches(s, p, str)
	if err != nil {
		return nil, err
	}
	groups := p.re.NumSubexp()
	if err := s.spendItems(len(ms) * (1 + groups)); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(ms))
	for _, m := range ms {
		switch groups {
		case 0:
			out = append(out, str[m[0]:m[1]])
		case 1:
			out = append(out, repl(nil).group(str, m, 1))
		default:
			t := make(tuple, groups)
			for i := range t {
				t[i] = repl(nil).group(str, m, i+1)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func filterRegexFindall(s *state, a []any, kw map[string]any) (any, error) {
	return findall(s, a, kw)
}

func filterRegexFindallIndex(s *state, a []any, kw map[string]any) (any, error) {
	all, err := findall(s, a, kw)
	if err != nil {
		return nil, err
	}
	i, _ := num(argOr(a, kw, 2, "index", 0)).(int)
	if i < 0 {
		i += len(all)
	}
	if i < 0 || i >= len(all) {
		return nil, errors.New("list index out of range")
	}
	return all[i], nil
}
