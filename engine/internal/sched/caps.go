package sched

import (
	"strconv"

	"github.com/pilothouse/pilothouse/internal/shown"
)

// takeLive takes one of the rule's principal's live firings (bounds.Live),
// or says why there is none; an admin (the owner) is not bounded.
func (ar *Rule) takeLive() (refused string) {
	p := ar.principal
	if p.Admin {
		return ""
	}
	if n, ok := ar.s.live.Acquire(p.Name); !ok {
		return "refused: the rules of principal " + shown.Quote(p.Name) + " already run or queue " + strconv.Itoa(int(n)) +
			" firings at once (limits.max_live_firings_per_principal)"
	}
	return ""
}

// giveLive gives back the live firing of one of the rule's that ended.
func (ar *Rule) giveLive() {
	if !ar.principal.Admin {
		ar.s.live.Release(ar.principal.Name)
	}
}

// boundIDs is what an armed rule's program is bound to: its references,
// when it has catalog-reference params (nil otherwise).
func (ar *Rule) boundIDs() []string {
	if len(ar.c.RefParams()) == 0 {
		return nil
	}
	return ar.c.Refs
}
