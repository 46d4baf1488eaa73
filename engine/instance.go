package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/pilothouse/pilothouse/engine/internal/input"
	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/rules"
)

// instanceName is the rule a deploy of c with params installs. A program
// installs as the rule of its name; the same program (same program_ref)
// deployed for another input — the reusable motion light for a second
// room — becomes a second rule instead of silently replacing the first:
// "<name>-<its input>" (the devices and values it binds, e.g.
// motion-light-porch_light), or with a short hash when that is taken.
// A changed program under its name replaces the rule only when the input
// asks for it (install.replace; see replaceCheck); install.rule names the
// rule instead of all this.
func (e *Engine) instanceName(ctx context.Context, p *Principal, c *rules.Compiled, params map[string]any) string {
	base := c.Name()
	pj, _ := json.Marshal(params)
	old, err := e.store.GetRule(ctx, base)
	if err != nil || old.Ref != promoted.Ref(c) || old.Principal != p.Name || string(paramsKey(old.Params)) == string(paramsKey(pj)) {
		return base
	}
	sum := sha256.Sum256(paramsKey(pj))
	for _, name := range []string{base + "-" + input.Words(params), base + "-" + hex.EncodeToString(sum[:3])} {
		r, err := e.store.GetRule(ctx, name)
		if err != nil || r.Ref == old.Ref && r.Principal == p.Name && string(paramsKey(r.Params)) == string(paramsKey(pj)) {
			return name // free, or this very instance (unchanged)
		}
	}
	return base + "-" + hex.EncodeToString(sum[:8])
}
