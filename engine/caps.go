package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// ruleCap is how many rules p may keep installed: an admin (the owner)
// manages the house and is not capped.
func (e *Engine) ruleCap(p *Principal) int {
	if p.Admin {
		return 0
	}
	return e.cfg.Limits.MaxRulesPerPrincipal
}

// ruleCapError is the request error of a deploy past p's rule cap
// (err holds a *storage.RuleCapError): nothing was installed or promoted.
func (e *Engine) ruleCapError(p *Principal, err error) *pilotage.RequestError {
	var c *storage.RuleCapError
	errors.As(err, &c)
	return &pilotage.RequestError{Kind: pilotage.ErrResourceExhausted, CatalogVersion: e.cat.View(p).Version(),
		Message: fmt.Sprintf("principal %s keeps %d rules, the most limits.max_rules_per_principal (%d) allows; nothing was installed: remove a rule (pilotage_manage) or deploy over one of yours (input.install.replace)",
			quote(p.Name), c.Rules, c.Max)}
}

// liveFirings counts each principal's firings running at once (a firing
// waiting in a delay or wait step is running), bounded by
// limits.max_live_firings_per_principal: what a principal's firings hold
// in memory together is at most that many runs' MaxEvalBytes and
// MaxRunBytes. Queued firings hold only their trigger and are not counted.
type liveFirings struct {
	max     int64
	counts  sync.Map // principal name → *atomic.Int64
	refused atomic.Uint64
}

func (l *liveFirings) count(p *Principal) *atomic.Int64 {
	if c, ok := l.counts.Load(p.Name); ok {
		return c.(*atomic.Int64)
	}
	c, _ := l.counts.LoadOrStore(p.Name, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// acquire takes a firing slot of p, or says why there is none (counted);
// an admin (the owner) is not bounded.
func (l *liveFirings) acquire(p *Principal) (refused string) {
	if p.Admin {
		return ""
	}
	c := l.count(p)
	for {
		n := c.Load()
		if n >= l.max {
			l.refused.Add(1)
			return "refused: the rules of principal " + quote(p.Name) + " already run " + itoa(int(n)) +
				" firings at once (limits.max_live_firings_per_principal)"
		}
		if c.CompareAndSwap(n, n+1) {
			return ""
		}
	}
}

// release gives back the slot of one of p's firings that ended.
func (l *liveFirings) release(p *Principal) {
	if !p.Admin {
		l.count(p).Add(-1)
	}
}
