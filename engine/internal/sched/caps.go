package sched

import (
	"strconv"

	"github.com/pilothouse/pilothouse/internal/shown"
)

// takeLive takes one of the rule's principal's live firings (bounds.Live),
// or says why there is none: its principal's rules already run as many as
// its bound, limits.max_live_firings_per_principal or, for an admin (the
// owner), limits.max_live_firings_admin. The first refusal and every
// thousandth are logged; each is counted (Live.Refused).
func (ar *Rule) takeLive() (refused string) {
	p := ar.principal
	n, c, ok := ar.s.live.Acquire(p.Name, p.Admin)
	if ok {
		return ""
	}
	limit := "limits.max_live_firings_per_principal"
	if p.Admin {
		limit = "limits.max_live_firings_admin"
	}
	if c == 1 || c%1000 == 0 {
		ar.s.d.Log.Warn("a firing was refused: its principal's rules already run the most firings at once",
			"rule", ar.name, "principal", p.Name, "running", n, "limit", limit, "refused", c)
	}
	return "refused: the rules of principal " + shown.Quote(p.Name) + " already run or queue " + strconv.Itoa(int(n)) +
		" firings at once (" + limit + ")"
}

// giveLive gives back the live firing of one of the rule's that ended.
func (ar *Rule) giveLive() { ar.s.live.Release(ar.principal.Name) }

// boundIDs is what an armed rule's program is bound to: its references,
// when it has catalog-reference params (nil otherwise).
func (ar *Rule) boundIDs() []string {
	if len(ar.c.RefParams()) == 0 {
		return nil
	}
	return ar.c.Refs
}
