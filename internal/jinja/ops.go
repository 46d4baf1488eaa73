package jinja

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// binaryOp applies + - * / // % ** ~ with Python's semantics, bounded.
func binaryOp(s *state, op string, l, r any) (any, error) {
	if err := s.spend(1); err != nil {
		return nil, err
	}
	switch op {
	case "~":
		a, err := s.str(l)
		if err != nil {
			return nil, err
		}
		b, err := s.str(r)
		if err != nil {
			return nil, err
		}
		if err := s.spendBytes(len(a) + len(b)); err != nil {
			return nil, err
		}
		return a + b, nil
	case "+":
		if v, ok, err := concat(s, l, r); ok || err != nil {
			return v, err
		}
	case "*":
		if v, ok, err := repeat(s, l, r); ok || err != nil {
			return v, err
		}
	case "%":
		if f, ok := l.(string); ok {
			args, isTuple := r.(tuple)
			if !isTuple {
				args = tuple{r}
			}
			return pyFormat(s, f, args)
		}
	}
	a, b := num(l), num(r)
	if !isNumber(a) || !isNumber(b) {
		return nil, fmt.Errorf("unsupported operand types for %s: %s and %s", op, pyType(l), pyType(r))
	}
	ai, aInt := a.(int)
	bi, bInt := b.(int)
	if aInt && bInt {
		if v, ok, err := intOp(op, ai, bi); ok || err != nil {
			return v, err
		}
	}
	af, _ := toF(a)
	bf, _ := toF(b)
	return floatOp(op, af, bf)
}

// concat adds strings, lists or tuples; ok is false for other operands.
func concat(s *state, l, r any) (any, bool, error) {
	switch a := l.(type) {
	case string:
		if b, ok := r.(string); ok {
			if err := s.spendBytes(len(a) + len(b)); err != nil {
				return nil, true, err
			}
			return a + b, true, nil
		}
	case []any:
		if b, ok := r.([]any); ok {
			if err := s.spendItems(len(a) + len(b)); err != nil {
				return nil, true, err
			}
			return append(append(make([]any, 0, len(a)+len(b)), a...), b...), true, nil
		}
	case tuple:
		if b, ok := r.(tuple); ok {
			if err := s.spendItems(len(a) + len(b)); err != nil {
				return nil, true, err
			}
			return tuple(append(append(make([]any, 0, len(a)+len(b)), a...), b...)), true, nil
		}
	}
	return nil, false, nil
}

// repeat is str * int and list * int.
func repeat(s *state, l, r any) (any, bool, error) {
	seq, n := l, r
	if _, ok := num(seq).(int); ok {
		seq, n = r, l
	}
	k, ok := n.(int)
	if !ok {
		return nil, false, nil
	}
	k = max(k, 0)
	switch x := seq.(type) {
	case string:
		if len(x) > 0 && k > MaxValue/len(x) {
			return nil, true, ErrSize
		}
		if err := s.spendBytes(len(x) * k); err != nil {
			return nil, true, err
		}
		return strings.Repeat(x, k), true, nil
	case []any:
		if len(x) == 0 || k == 0 { // nothing to repeat, however many times
			return []any{}, true, s.spend(1)
		}
		if k > MaxValue/len(x) {
			return nil, true, ErrSize
		}
		if err := s.spendItems(len(x) * k); err != nil {
			return nil, true, err
		}
		out := make([]any, 0, len(x)*k)
		for i := 0; i < k; i++ {
			out = append(out, x...)
		}
		return out, true, nil
	}
	return nil, false, nil
}

// intOp computes int results exactly; ok is false when the result needs a
// float (true division, negative powers, overflow).
func intOp(op string, a, b int) (any, bool, error) {
	switch op {
	case "+":
		if c := a + b; (c > a) == (b > 0) {
			return c, true, nil
		}
	case "-":
		if c := a - b; (c < a) == (b > 0) {
			return c, true, nil
		}
	case "*":
		if a == 0 || b == 0 {
			return 0, true, nil
		}
		hi, lo := bits.Mul64(uint64(abs(a)), uint64(abs(b)))
		if hi == 0 && lo <= math.MaxInt64 {
			c := int(lo)
			if (a < 0) != (b < 0) {
				c = -c
			}
			return c, true, nil
		}
	case "//", "%":
		if b == 0 {
			return nil, true, fmt.Errorf("integer division or modulo by zero")
		}
		q, m := a/b, a%b
		if m != 0 && (m < 0) != (b < 0) {
			q, m = q-1, m+b
		}
		if op == "//" {
			return q, true, nil
		}
		return m, true, nil
	case "**":
		return intPow(a, b)
	}
	return nil, false, nil
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

func intPow(a, b int) (any, bool, error) {
	switch {
	case b < 0:
		return nil, false, nil
	case b == 0 || a == 1:
		return 1, true, nil
	case a == 0:
		return 0, true, nil
	case a == -1:
		return 1 - 2*(b%2), true, nil
	case b > 64: // |a| >= 2: beyond int64
		return nil, false, nil
	}
	r := 1
	for i := 0; i < b; i++ {
		hi, lo := bits.Mul64(uint64(abs(r)), uint64(abs(a)))
		if hi != 0 || lo > math.MaxInt64 {
			return nil, false, nil
		}
		neg := (r < 0) != (a < 0)
		r = int(lo)
		if neg {
			r = -r
		}
	}
	return r, true, nil
}

func floatOp(op string, a, b float64) (any, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return a / b, nil
	case "//":
		if b == 0 {
			return nil, fmt.Errorf("float floor division by zero")
		}
		return math.Floor(a / b), nil
	case "%":
		if b == 0 {
			return nil, fmt.Errorf("float modulo by zero")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**":
		return math.Pow(a, b), nil
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

// pyFormat is Python's printf-style "fmt % args" (and the format filter):
// %s %r %d %i %f %F %e %E %g %G %x %X %o %c %% with flags, width and
// precision.
func pyFormat(s *state, f string, args []any) (string, error) {
	if err := s.spendBytes(len(f)); err != nil {
		return "", err
	}
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0", f[j]) >= 0 {
			j++
		}
		for j < len(f) && (isDigit(f[j]) || f[j] == '.') {
			j++
		}
		if j >= len(f) {
			return "", fmt.Errorf("incomplete format")
		}
		spec, verb := f[i+1:j], f[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if next >= len(args) {
			return "", fmt.Errorf("not enough arguments for format string")
		}
		out, err := formatOne(s, spec, verb, args[next])
		if err != nil {
			return "", err
		}
		next++
		if b.Len()+len(out) > MaxValue {
			return "", ErrSize
		}
		b.WriteString(out)
	}
	if next < len(args) {
		return "", fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

// specWidth is the width plus the precision a format spec asks for.
func specWidth(spec string) int {
	total, n := 0, 0
	for i := 0; i < len(spec); i++ {
		if isDigit(spec[i]) {
			n = n*10 + int(spec[i]-'0')
			continue
		}
		total, n = total+n, 0
	}
	return total + n
}

// formatOne formats one argument; its width (at most 4 digits) is charged
// with the text.
func formatOne(s *state, spec string, verb byte, v any) (string, error) {
	if w := strings.TrimLeft(spec, "-+ #0"); len(w) > 4 {
		return "", fmt.Errorf("format width too large")
	}
	if err := s.spendBytes(specWidth(spec) + 320); err != nil { // a %f of 1e308 has 309 digits
		return "", err
	}
	switch verb {
	case 's', 'r', 'a':
		str, err := s.str(v)
		if verb != 's' {
			str, err = s.repr(v)
		}
		if err != nil {
			return "", err
		}
		if err := s.spendBytes(len(str)); err != nil {
			return "", err
		}
		return fmt.Sprintf("%"+spec+"s", str), nil
	case 'd', 'i', 'x', 'X', 'o', 'c':
		n := num(v)
		if f, ok := n.(float64); ok {
			n = int(math.Trunc(f))
		}
		i, ok := n.(int)
		if !ok {
			return "", fmt.Errorf("%%%c format: a real number is required, not %s", verb, pyType(v))
		}
		if verb == 'i' {
			verb = 'd'
		}
		return fmt.Sprintf("%"+spec+string(verb), i), nil
	case 'f', 'F', 'e', 'E', 'g', 'G':
		f, ok := toF(v)
		if !ok {
			if str, isStr := v.(string); isStr {
				return "", fmt.Errorf("must be real number, not str %q", str)
			}
			return "", fmt.Errorf("must be real number, not %s", pyType(v))
		}
		if !strings.Contains(spec, ".") && verb != 'g' && verb != 'G' {
			spec += ".6"
		}
		return fmt.Sprintf("%"+spec+string(verb), f), nil
	}
	return "", fmt.Errorf("unsupported format character %q", verb)
}

// maxNumberLen bounds the text read as a number (or a boolean, or a date):
// the conversions that take any value are not charged, so they refuse long
// text before they scan or copy it.
const maxNumberLen = 1 << 10

// pyInt is Python's int() of a value (strings in base, floats truncated).
func pyInt(v any, base int) (int, bool) {
	switch x := num(v).(type) {
	case int:
		return x, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 9e18 {
			return 0, false
		}
		return int(math.Trunc(x)), true
	case string:
		if len(x) > maxNumberLen {
			return 0, false
		}
		t := strings.ReplaceAll(strings.TrimSpace(x), "_", "")
		if base == 16 {
			t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
		}
		if n, err := strconv.ParseInt(t, base, 64); err == nil {
			return int(n), true
		}
	}
	return 0, false
}

// pyFloatOf is Python's float() of a value.
func pyFloatOf(v any) (float64, bool) {
	if f, ok := toF(v); ok {
		return f, true
	}
	if s, ok := v.(string); ok && len(s) <= maxNumberLen {
		t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
		if strings.HasPrefix(strings.ToLower(strings.TrimLeft(t, "+-")), "0x") {
			return 0, false
		}
		f, err := strconv.ParseFloat(t, 64)
		return f, err == nil || (err != nil && strings.Contains(err.Error(), "range") && !math.IsNaN(f))
	}
	return 0, false
}
