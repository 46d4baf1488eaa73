package promoted

import (
	"crypto/sha256"
	"encoding/json"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Body is a promoted program held in memory, compiled once. The stored
// JSON (body, plan, baseline bytes) stays in SQLite: the compiled form
// already holds what firing and listing need.
//
// The plan is not held at all: it is read for one rule's page, and it is
// derived again from the compiled program and the entries it was validated
// against (rules.BuildPlan is a function of the two, and both are
// immutable), while a decoded plan is several hundred pointers per rule
// for the collector to trace on every cycle, and even its encoding was the
// larger part of a held rule.
type Body struct {
	compiled *rules.Compiled // Plan is nil: see DecodedPlan
	// The baseline, sorted by id: the ids (compiled.Refs, the same ids,
	// when they are) and their sums, sha256.Size bytes each, kept in one
	// pointer-free object with the program's JSON.
	baseIDs  []string
	baseSums []byte
	hasPlan  bool
	maxRisk  pilotage.Risk
	maxHints pilotage.RiskHints // what a deploy of it was approved for
}

// baseline returns the i-th entry of b's baseline.
func (b *Body) baseline(i int) Sum {
	bs := Sum{id: b.baseIDs[i]}
	copy(bs.sum[:], b.baseSums[i*sha256.Size:])
	return bs
}

// NewBody holds c under ref (rules.Compiled.Hold), its plan taken out and
// its JSON kept beside the baseline.
func NewBody(c *rules.Compiled, ref string, base []Sum) *Body {
	c = c.Hold(ref) // a copy of its own: its Raw and Plan change below
	b := &Body{compiled: c}
	// The baseline's ids are the referenced ids (both are the entries the
	// program was validated against, sorted): share them when they are.
	b.baseIDs = c.Refs
	for i, bs := range base {
		if len(base) != len(c.Refs) || bs.id != c.Refs[i] {
			b.baseIDs = make([]string, len(base))
			for j, bs := range base {
				b.baseIDs[j] = bs.id
			}
			break
		}
	}
	raw := len(c.Raw)
	buf := make([]byte, raw+len(base)*sha256.Size)
	copy(buf, c.Raw)
	for i, bs := range base {
		copy(buf[raw+i*sha256.Size:], bs.sum[:])
	}
	c.Raw, b.baseSums = buf[:raw:raw], buf[raw:]
	if c.Plan != nil {
		b.hasPlan = true
		b.maxRisk, b.maxHints = c.Plan.MaxRisk, c.Plan.MaxRiskHints
		c.Plan = nil
	}
	return b
}

// Compiled is the program held, without its plan (see DecodedPlan).
func (b *Body) Compiled() *rules.Compiled { return b.compiled }

// HasPlan reports whether the body was promoted with a plan: MaxRisk and
// MaxHints are its.
func (b *Body) HasPlan() bool { return b.hasPlan }

// MaxRisk is the plan's aggregate risk.
func (b *Body) MaxRisk() pilotage.Risk { return b.maxRisk }

// MaxHints is the plan's aggregate risk hints: what a deploy of the body
// was approved for.
func (b *Body) MaxHints() pilotage.RiskHints { return b.maxHints }

// DecodedPlan returns the body's plan (nil if it has none), as it was
// encoded when the body was promoted or loaded.
func (b *Body) DecodedPlan() *pilotage.Plan {
	if !b.hasPlan {
		return nil
	}
	enc, err := json.Marshal(rules.BuildPlan(b.compiled))
	if err != nil {
		return nil
	}
	var p pilotage.Plan
	if json.Unmarshal(enc, &p) != nil {
		return nil
	}
	return &p
}

// Drift compares the body's baseline with the entries get finds now: the
// id of the first referenced entry that is gone or changed, "" when none
// is.
func (b *Body) Drift(get func(id string) (*pilotage.Entry, bool)) (id string, gone bool) {
	for i := range b.baseIDs {
		bs := b.baseline(i)
		en, ok := get(bs.id)
		if !ok {
			return bs.id, true
		}
		if sumBaseline(BaselineOf(en)) != bs.sum {
			return bs.id, false
		}
	}
	return "", false
}
