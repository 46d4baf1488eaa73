package core

import (
	"slices"
	"strings"
)

// Did-you-mean suggestions (unknown_name, unknown_field, input_binding,
// modes, kinds, weekdays …) are ranked by one function, similar: by
// how close a candidate is to what was written, never alphabetically.
//
// The closeness of a candidate c to a query q is
//   - the optimal-string-alignment distance (Levenshtein plus adjacent
//     transpositions: "hall_ligth" is 1 from "hall_light") of their
//     normal forms (lower case; '.', '-', ' ' and '_' are the same
//     separator, so "kitchen.light" is 0 from "kitchen_light"),
//   - or, one more than that, the distance from q to a prefix of c
//     ending at a separator ("kitchen.light" → "kitchen_light.set",
//     "hall_light" → "hall_light.set"), whichever is less;
//
// ties go to the longer common prefix as written (the start of a name
// matters most), then the fewer raw edits, the shorter candidate, and
// only last the alphabet.

// similarBudget is the largest distance a suggestion may have from q.
func similarBudget(q string) int { return max(2, len(q)/3) }

// closeMatches returns up to limit candidates close to s (within
// similarBudget), the most similar first.
func CloseMatches(s string, candidates []string, limit int) []string {
	return Similar(s, candidates, limit, similarBudget(s))
}

// similar ranks candidates by their closeness to q and returns the first
// limit of those within budget (budget < 0: every candidate).
func Similar(q string, candidates []string, limit, budget int) []string {
	type match struct {
		c                  string
		cost, prefix, edit int
	}
	nq, lq := normalForm(q), strings.ToLower(q)
	var ms []match
	for _, c := range candidates {
		b := budget
		if b < 0 {
			b = len(nq) + len(c)
		}
		switch {
		case len(nq) > 256 || len(c) > 256:
			if c != q {
				continue
			}
		case len(c) < len(nq)-b: // a prefix of c may match: only shorter ones are out of reach
			continue
		}
		cost := closeness(nq, normalForm(c), b)
		if cost > b {
			continue
		}
		lc := strings.ToLower(c)
		ms = append(ms, match{c: c, cost: cost, prefix: commonPrefix(lq, lc), edit: osa(lq, lc, len(lq)+len(lc))[len(lc)]})
	}
	slices.SortFunc(ms, func(a, b match) int {
		switch {
		case a.cost != b.cost:
			return a.cost - b.cost
		case a.prefix != b.prefix:
			return b.prefix - a.prefix
		case a.edit != b.edit:
			return a.edit - b.edit
		case len(a.c) != len(b.c):
			return len(a.c) - len(b.c)
		}
		return strings.Compare(a.c, b.c)
	})
	out := make([]string, 0, min(limit, len(ms)))
	for i := 0; i < len(ms) && i < limit; i++ {
		out = append(out, ms[i].c)
	}
	return out
}

// normalForm lowercases s and writes every separator as '_'.
func normalForm(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '-', ' ':
			return '_'
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// closeness is the cost of c for q (normal forms): their distance, or one
// more than q's distance to a prefix of c that ends at a separator.
func closeness(q, c string, budget int) int {
	row := osa(q, c, budget+1)
	best := row[len(c)]
	for j := 1; j < len(c); j++ {
		if c[j] == '_' && row[j]+1 < best {
			best = row[j] + 1
		}
	}
	return best
}

// osa returns the optimal-string-alignment distances from a to every
// prefix of b (index j: to b[:j]); once every alignment costs more than
// budget it stops, and the entries are then budget+1.
func osa(a, b string, budget int) []int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > budget {
			for j := range cur {
				cur[j] = budget + 1
			}
			return cur
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
