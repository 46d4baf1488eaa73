package jinja

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// binaryOp applies + - * / // % ** ~ with Python's semantics, bounded.
func binaryOp(s *jstate, op string, l, r any) (any, error) {
	if err := s.spend(1); err != nil {
		return nil, err
	}
	switch op {
	case "~":
		a, b := pyStr(l), pyStr(r)
		if err := s.spendValue(len(a) + len(b)); err != nil {
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
			args, isTuple := r.(jtuple)
			if !isTuple {
				args = jtuple{r}
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
func concat(s *jstate, l, r any) (any, bool, error) {
	switch a := l.(type) {
	case string:
		if b, ok := r.(string); ok {
			return a + b, true, s.spendValue(len(a) + len(b))
		}
	case []any:
		if b, ok := r.([]any); ok {
			if err := s.spendValue(len(a) + len(b)); err != nil {
				return nil, true, err
			}
			return append(append(make([]any, 0, len(a)+len(b)), a...), b...), true, nil
		}
	case jtuple:
		if b, ok := r.(jtuple); ok {
			if err := s.spendValue(len(a) + len(b)); err != nil {
				return nil, true, err
			}
			return jtuple(append(append(make([]any, 0, len(a)+len(b)), a...), b...)), true, nil
		}
	}
	return nil, false, nil
}

// repeat is str * int and list * int.
func repeat(s *jstate, l, r any) (any, bool, error) {
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
		if len(x) > 0 && k > maxJValue/len(x) {
			return nil, true, errJSize
		}
		return strings.Repeat(x, k), true, s.spendValue(len(x) * k)
	case []any:
		if len(x) > 0 && k > maxJValue/len(x) {
			return nil, true, errJSize
		}
		if err := s.spendValue(len(x) * k); err != nil {
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

// pyEqual is Python's ==.
func pyEqual(a, b any) bool {
	if af, ok := toF(a); ok {
		if _, isStr := b.(string); isStr {
			return false
		}
		bf, ok := toF(b)
		return ok && af == bf
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case jUndef:
		_, ok := b.(jUndef)
		return ok
	case []any:
		y, ok := b.([]any)
		return ok && seqEqual(x, y)
	case jtuple:
		y, ok := b.(jtuple)
		return ok && seqEqual(x, y)
	case map[string]any, *jdict:
		return dictEqual(a, b)
	}
	return false
}

func seqEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !pyEqual(norm(a[i]), norm(b[i])) {
			return false
		}
	}
	return true
}

func dictEqual(a, b any) bool {
	ka, va := dictItems(a)
	kb, vb := dictItems(b)
	if ka == nil || kb == nil || len(ka) != len(kb) {
		return false
	}
	for i, k := range ka {
		found := false
		for j, k2 := range kb {
			if pyEqual(k, k2) {
				found = pyEqual(norm(va[i]), norm(vb[j]))
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// dictItems lists a dict's keys and values (nil for anything else).
func dictItems(v any) ([]any, []any) {
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		ks, vs := make([]any, len(keys)), make([]any, len(keys))
		for i, k := range keys {
			ks[i], vs[i] = k, norm(x[k])
		}
		return ks, vs
	case *jdict:
		return append([]any{}, x.keys...), append([]any{}, x.vals...)
	}
	return nil, nil
}

// compare applies one comparison operator.
func compare(op string, a, b any) (bool, error) {
	switch op {
	case "==":
		return pyEqual(a, b), nil
	case "!=":
		return !pyEqual(a, b), nil
	case "in", "not in":
		in, err := contains(b, a)
		return in == (op == "in"), err
	}
	c, err := order(a, b)
	if err != nil {
		return false, err
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// order compares numbers, strings or sequences; -1, 0 or 1.
func order(a, b any) (int, error) {
	if af, ok := toF(a); ok {
		if bf, ok := toF(b); ok {
			switch {
			case af < bf:
				return -1, nil
			case af > bf:
				return 1, nil
			}
			return 0, nil
		}
	}
	if as, ok := a.(string); ok {
		if bs, ok := b.(string); ok {
			return strings.Compare(as, bs), nil
		}
	}
	if at, ok := a.(jtime); ok {
		if bt, ok := b.(jtime); ok {
			return at.t.Compare(bt.t), nil
		}
	}
	as, aok := seqOf(a)
	bs, bok := seqOf(b)
	if aok && bok {
		for i := 0; i < len(as) && i < len(bs); i++ {
			if pyEqual(norm(as[i]), norm(bs[i])) {
				continue
			}
			return order(norm(as[i]), norm(bs[i]))
		}
		return len(as) - len(bs), nil
	}
	return 0, fmt.Errorf("'<' not supported between %s and %s", pyType(a), pyType(b))
}

func seqOf(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case jtuple:
		return x, true
	}
	return nil, false
}

// contains is Python's "x in c".
func contains(c, x any) (bool, error) {
	switch v := c.(type) {
	case string:
		s, ok := x.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", pyType(x))
		}
		return strings.Contains(v, s), nil
	case []any:
		return seqContains(v, x), nil
	case jtuple:
		return seqContains(v, x), nil
	case map[string]any:
		s, ok := x.(string)
		if !ok {
			return false, nil
		}
		_, in := v[s]
		return in, nil
	case *jdict:
		_, in := v.get(x)
		return in, nil
	case jUndef:
		return false, nil
	}
	return false, fmt.Errorf("argument of type %s is not iterable", pyType(c))
}

func seqContains(xs []any, x any) bool {
	for _, e := range xs {
		if pyEqual(norm(e), x) {
			return true
		}
	}
	return false
}

// pyFormat is Python's printf-style "fmt % args" (and the format filter):
// %s %r %d %i %f %F %e %E %g %G %x %X %o %c %% with flags, width and
// precision.
func pyFormat(s *jstate, f string, args []any) (string, error) {
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
		out, err := formatOne(spec, verb, args[next])
		if err != nil {
			return "", err
		}
		next++
		b.WriteString(out)
		if err := s.spendValue(b.Len()); err != nil {
			return "", err
		}
	}
	if next < len(args) {
		return "", fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func formatOne(spec string, verb byte, v any) (string, error) {
	if w := strings.TrimLeft(spec, "-+ #0"); len(w) > 4 {
		return "", fmt.Errorf("format width too large")
	}
	switch verb {
	case 's':
		return fmt.Sprintf("%"+spec+"s", pyStr(v)), nil
	case 'r', 'a':
		return fmt.Sprintf("%"+spec+"s", pyRepr(v)), nil
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
	if s, ok := v.(string); ok {
		t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
		if strings.HasPrefix(strings.ToLower(strings.TrimLeft(t, "+-")), "0x") {
			return 0, false
		}
		f, err := strconv.ParseFloat(t, 64)
		return f, err == nil || (err != nil && strings.Contains(err.Error(), "range") && !math.IsNaN(f))
	}
	return 0, false
}
