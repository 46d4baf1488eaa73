package engine

import (
	"errors"
	"fmt"

	"github.com/pilothouse/pilothouse/internal/shown"
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
			shown.Quote(p.Name), c.Rules, c.Max)}
}
