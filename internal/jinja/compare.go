package jinja

import (
	"fmt"
	"strings"
)

// Python's comparisons: ==, ordering and `in`. Each walks values item by
// item, charging every item it visits and descending at most MaxDepth; a
// list or tuple compared with itself is equal at once, as Python's
// identity shortcut has it (so `b == b` costs one item however big b is).

// equal is Python's ==.
func (s *state) equal(a, b any) (bool, error) { return s.eq(a, b, 0) }

func (s *state) eq(a, b any, depth int) (bool, error) {
	if err := s.spend(1); err != nil {
		return false, err
	}
	if x, ok := a.(string); ok { // the common case first: dict keys, states
		y, ok := b.(string)
		if !ok || len(x) != len(y) {
			return false, nil
		}
		if len(x) >= BytesPerUnit {
			if err := s.spend(len(x) / BytesPerUnit); err != nil {
				return false, err
			}
		}
		return x == y, nil
	}
	if depth > MaxDepth {
		return false, ErrDepth
	}
	if af, ok := toF(a); ok {
		if _, isStr := b.(string); isStr {
			return false, nil
		}
		bf, ok := toF(b)
		return ok && af == bf, nil
	}
	switch x := a.(type) {
	case nil:
		return b == nil, nil
	case undefinedValue:
		_, ok := b.(undefinedValue)
		return ok, nil
	case []any:
		if y, ok := b.([]any); ok {
			return s.seqEqual(x, y, depth)
		}
	case tuple:
		if y, ok := b.(tuple); ok {
			return s.seqEqual(x, y, depth)
		}
	case map[string]any, *dict:
		return s.dictEqual(a, b, depth)
	case *namespace:
		return a == b, nil
	}
	return false, nil
}

// sameSeq is Python's identity: the same list (one backing array, one
// length).
func sameSeq(a, b []any) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (s *state) seqEqual(a, b []any, depth int) (bool, error) {
	if len(a) != len(b) {
		return false, nil
	}
	if sameSeq(a, b) {
		return true, nil
	}
	for i := range a {
		if eq, err := s.eq(norm(a[i]), norm(b[i]), depth+1); !eq || err != nil {
			return false, err
		}
	}
	return true, nil
}

func dictLen(v any) (int, bool) {
	switch x := v.(type) {
	case map[string]any:
		return len(x), true
	case *dict:
		return len(x.keys), true
	}
	return 0, false
}

// dictEqual compares two dicts key by key, in a fixed order so that the
// work (and a budget error) does not depend on map iteration.
func (s *state) dictEqual(a, b any, depth int) (bool, error) {
	na, okA := dictLen(a)
	nb, okB := dictLen(b)
	if !okA || !okB || na != nb {
		return false, nil
	}
	ks, vs, err := dictItems(s, a)
	if err != nil {
		return false, err
	}
	for i, k := range ks {
		w, found, err := s.dictGet(b, k)
		if err != nil || !found {
			return false, err
		}
		if eq, err := s.eq(vs[i], w, depth+1); !eq || err != nil {
			return false, err
		}
	}
	return true, nil
}

// dictGet finds key k in a dict.
func (s *state) dictGet(d, k any) (any, bool, error) {
	switch x := d.(type) {
	case map[string]any:
		ks, ok := k.(string)
		if !ok {
			return nil, false, nil
		}
		v, ok := x[ks]
		return norm(v), ok, nil
	case *dict:
		return x.get(s, k)
	}
	return nil, false, nil
}

// dictItems lists a dict's keys and values (nil for anything else),
// charged as items made.
func dictItems(s *state, v any) ([]any, []any, error) {
	n, ok := dictLen(v)
	if !ok {
		return nil, nil, nil
	}
	if err := s.spendItems(2 * n); err != nil {
		return nil, nil, err
	}
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		ks, vs := make([]any, len(keys)), make([]any, len(keys))
		for i, k := range keys {
			ks[i], vs[i] = k, norm(x[k])
		}
		return ks, vs, nil
	case *dict:
		return append([]any{}, x.keys...), append([]any{}, x.vals...), nil
	}
	return nil, nil, nil
}

// compare applies one comparison operator.
func (s *state) compare(op string, a, b any) (bool, error) {
	switch op {
	case "==":
		return s.equal(a, b)
	case "!=":
		eq, err := s.equal(a, b)
		return !eq, err
	case "in", "not in":
		in, err := s.contains(b, a)
		return in == (op == "in"), err
	}
	c, err := s.order(a, b, 0)
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

// order compares numbers, strings, datetimes or sequences; -1, 0 or 1.
func (s *state) order(a, b any, depth int) (int, error) {
	if err := s.spend(1); err != nil {
		return 0, err
	}
	if depth > MaxDepth {
		return 0, ErrDepth
	}
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
			if err := s.spendBytes(min(len(as), len(bs))); err != nil {
				return 0, err
			}
			return strings.Compare(as, bs), nil
		}
	}
	if at, ok := a.(datetime); ok {
		if bt, ok := b.(datetime); ok {
			return at.t.Compare(bt.t), nil
		}
	}
	as, aok := seqOf(a)
	bs, bok := seqOf(b)
	if aok && bok {
		return s.seqOrder(as, bs, depth)
	}
	return 0, fmt.Errorf("'<' not supported between %s and %s", pyType(a), pyType(b))
}

// seqOrder is Python's: the first items that differ decide, else the
// lengths.
func (s *state) seqOrder(as, bs []any, depth int) (int, error) {
	if sameSeq(as, bs) {
		return 0, nil
	}
	for i := 0; i < len(as) && i < len(bs); i++ {
		eq, err := s.eq(norm(as[i]), norm(bs[i]), depth+1)
		if err != nil {
			return 0, err
		}
		if !eq {
			return s.order(norm(as[i]), norm(bs[i]), depth+1)
		}
	}
	return len(as) - len(bs), nil
}

func seqOf(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case tuple:
		return x, true
	}
	return nil, false
}

// contains is Python's "x in c".
func (s *state) contains(c, x any) (bool, error) {
	switch v := c.(type) {
	case string:
		str, ok := x.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", pyType(x))
		}
		if err := s.spendBytes(len(v)); err != nil {
			return false, err
		}
		return strings.Contains(v, str), nil
	case []any:
		return s.seqContains(v, x)
	case tuple:
		return s.seqContains(v, x)
	case map[string]any:
		str, ok := x.(string)
		if !ok {
			return false, nil
		}
		_, in := v[str]
		return in, nil
	case *dict:
		_, in, err := v.get(s, x)
		return in, err
	case undefinedValue:
		return false, nil
	}
	return false, fmt.Errorf("argument of type %s is not iterable", pyType(c))
}

func (s *state) seqContains(xs []any, x any) (bool, error) {
	for _, e := range xs {
		if eq, err := s.equal(norm(e), x); eq || err != nil {
			return eq, err
		}
	}
	return false, nil
}
