// Package promoted holds promoted programs in memory: their
// content-addressed reference, catalog baseline sums, plan-free compiled
// body, and the automation entry they serve.
package promoted

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// BaselineField is the load-bearing part of an entry (spec §5.4).
type BaselineField struct {
	Kind         pilotage.Kind      `json:"kind"`
	InputSchema  json.RawMessage    `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage    `json:"output_schema,omitempty"`
	Risk         pilotage.Risk      `json:"risk"`
	RiskHints    pilotage.RiskHints `json:"risk_hints"`
	Languages    []string           `json:"languages,omitempty"`
}

// BaselineOf is the load-bearing part of en.
func BaselineOf(en *pilotage.Entry) BaselineField {
	return BaselineField{Kind: en.Kind, InputSchema: pilotage.CanonicalJSON(en.InputSchema), OutputSchema: pilotage.CanonicalJSON(en.OutputSchema),
		Risk: en.Risk, RiskHints: en.RiskHints, Languages: en.Languages}
}

// BaselineJSON is b as stored and hashed.
func BaselineJSON(b BaselineField) []byte {
	out, _ := json.Marshal(b)
	return out
}

// Baseline is the load-bearing part of every entry c was validated
// against, by id.
func Baseline(c *rules.Compiled) map[string]BaselineField {
	base := make(map[string]BaselineField, len(c.Refs))
	for i, en := range c.Entries {
		base[c.Refs[i]] = BaselineOf(en)
	}
	return base
}

// Ref is the immutable, content-addressed reference of a body and its
// baseline: re-promoting the same body after a referenced entry changed
// mints a new reference (spec §5.4).
func Ref(c *rules.Compiled) string {
	h := sha256.New()
	h.Write(pilotage.CanonicalJSON(c.Raw))
	for i, en := range c.Entries { // in Refs order: sorted by id
		h.Write([]byte{0})
		h.Write([]byte(c.Refs[i]))
		h.Write([]byte{0})
		h.Write(BaselineJSON(BaselineOf(en)))
	}
	return "automation." + c.Name() + "@" + hex.EncodeToString(h.Sum(nil)[:6])
}

// Sum is one referenced entry's load-bearing fields, hashed: all drift
// detection needs in memory (the fields themselves are stored).
type Sum struct {
	id  string
	sum [sha256.Size]byte
}

func sumBaseline(b BaselineField) [sha256.Size]byte { return sha256.Sum256(BaselineJSON(b)) }

// Sums hashes a baseline, sorted by id.
func Sums(base map[string]BaselineField) []Sum {
	out := make([]Sum, 0, len(base))
	for id, b := range base {
		out = append(out, Sum{id, sumBaseline(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Catalog is a rules.Catalog made of a baseline: the entries a stored
// program (or a bound rule) was validated against, as recorded.
func Catalog(base map[string]BaselineField) rules.Catalog {
	cat := &baselineCatalog{base: make(map[string]*pilotage.Entry, len(base))}
	for id, b := range base {
		cat.base[id] = &pilotage.Entry{ID: id, Kind: b.Kind, Callable: pilotage.KindCallable(b.Kind),
			InputSchema: b.InputSchema, OutputSchema: b.OutputSchema, Risk: b.Risk, RiskHints: b.RiskHints, Languages: b.Languages}
		cat.ids = append(cat.ids, id)
	}
	sort.Strings(cat.ids)
	return cat
}

// baselineCatalog is a rules.Catalog made of a promotion baseline.
type baselineCatalog struct {
	base map[string]*pilotage.Entry
	ids  []string
}

func (b *baselineCatalog) Get(id string) (*pilotage.Entry, bool) { e, ok := b.base[id]; return e, ok }
func (b *baselineCatalog) IDs() []string                         { return b.ids }
func (b *baselineCatalog) Version() string                       { return "" }
