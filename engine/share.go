package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

// Each run is bounded by MaxRunOps, but a rule firing hundreds of times
// at once (mode parallel) multiplied that by its firings: 300 firings of
// a rule any deployer may install took the house's two cores for minutes.
// A rule's firings share one bucket of operations instead: at most
// MaxRunOps at once, refilled at a tenth of that a second. A run takes
// what the bucket holds (up to MaxRunOps) and gives back what it did not
// use, so a household rule (a few hundred operations a firing) never
// notices it.
// A principal's rules together share principalShares times that, so many
// heavy rules of one principal (an assistant's) do not add up to the
// cores either.
const (
	shareRefill     = 10 * time.Second // to refill a whole share
	principalShares = 4
)

// opsShare is one rule's bucket of expression operations.
type opsShare struct {
	mu     sync.Mutex
	tokens float64
	at     time.Time
	max    int
}

// take grants a run up to max operations from the bucket at now (full at
// first).
func (s *opsShare) take(now time.Time, max int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max = max
	if s.at.IsZero() {
		s.tokens = float64(max)
	} else if d := now.Sub(s.at); d > 0 {
		s.tokens = min(float64(max), s.tokens+float64(max)*d.Seconds()/shareRefill.Seconds())
	}
	s.at = now
	grant := int(min(s.tokens, float64(max)))
	s.tokens -= float64(grant)
	return grant
}

// runShared runs f's rule body with the operations its rule's share
// grants, gives back what it did not use, and says so when the share cut
// the run short.
func (f *firing) runShared(in rules.RunInput) *rules.RunResult {
	ar := f.ar
	now, full := ar.s.e.Now(), ar.s.e.cfg.Limits.WithDefaults().MaxRunOps
	rule, mine := ar.opsShare(), ar.s.principalShare(ar.principal.Name)
	byRule := rule.take(now, full)
	grant := mine.take(now, principalShares*full)
	if byRule < grant {
		mine.give(grant - byRule)
		grant = byRule
	} else {
		rule.give(byRule - grant)
	}
	in.Limits.MaxRunOps = max(grant, 1)
	res := rules.Run(f.ctx, ar.c, &f.world, in)
	rule.give(grant - res.Ops)
	mine.give(grant - res.Ops)
	if grant < full && res.Outcome.Status == rules.StatusLimitExceeded {
		res.Outcome.Error += fmt.Sprintf(" (this rule's firings share %d operations and %s's rules %d, refilled over %s: the others had used all but %d)",
			full, ar.principal.Name, principalShares*full, shareRefill, grant)
	}
	return res
}

// principalShare is the share of the rules name installed.
func (s *scheduler) principalShare(name string) *opsShare {
	if v, ok := s.shares.Load(name); ok {
		return v.(*opsShare)
	}
	v, _ := s.shares.LoadOrStore(name, &opsShare{})
	return v.(*opsShare)
}

// opsShare is the rule's share, made at its first firing (a house holds
// thousands of rules that rarely fire).
func (ar *armedRule) opsShare() *opsShare {
	if s := ar.share.Load(); s != nil {
		return s
	}
	ar.share.CompareAndSwap(nil, &opsShare{})
	return ar.share.Load()
}

// give returns what a run was granted and did not use.
func (s *opsShare) give(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.tokens = min(s.tokens+float64(n), float64(s.max))
	s.mu.Unlock()
}
