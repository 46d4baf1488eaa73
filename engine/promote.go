package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// baselineField is the load-bearing part of an entry (spec §5.4).
type baselineField struct {
	Kind         pilotage.Kind      `json:"kind"`
	InputSchema  json.RawMessage    `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage    `json:"output_schema,omitempty"`
	Risk         pilotage.Risk      `json:"risk"`
	RiskHints    pilotage.RiskHints `json:"risk_hints"`
	Languages    []string           `json:"languages,omitempty"`
}

func baselineOf(en *pilotage.Entry) baselineField {
	return baselineField{Kind: en.Kind, InputSchema: canonicalJSON(en.InputSchema), OutputSchema: canonicalJSON(en.OutputSchema),
		Risk: en.Risk, RiskHints: en.RiskHints, Languages: en.Languages}
}

func baselineJSON(b baselineField) []byte {
	out, _ := json.Marshal(b)
	return out
}

// programRef is the immutable, content-addressed reference of a body and
// its baseline: re-promoting the same body after a referenced entry changed
// mints a new reference (spec §5.4).
func programRef(c *rules.Compiled) string {
	h := sha256.New()
	h.Write(canonicalJSON(c.Raw))
	for i, en := range c.Entries { // in Refs order: sorted by id
		h.Write([]byte{0})
		h.Write([]byte(c.Refs[i]))
		h.Write([]byte{0})
		h.Write(baselineJSON(baselineOf(en)))
	}
	return "automation." + c.Name() + "@" + hex.EncodeToString(h.Sum(nil)[:6])
}

// promotedBody is a promoted program held in memory, compiled once. The
// stored JSON (body, plan, baseline bytes) stays in SQLite: the compiled
// form already holds what firing and listing need.
//
// The plan is not held at all: it is read for one rule's page, and it is
// derived again from the compiled program and the entries it was validated
// against (rules.BuildPlan is a function of the two, and both are
// immutable), while a decoded plan is several hundred pointers per rule
// for the collector to trace on every cycle, and even its encoding was the
// larger part of a held rule.
type promotedBody struct {
	compiled *rules.Compiled // Plan is nil: see decodedPlan
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
func (b *promotedBody) baseline(i int) baselineSum {
	bs := baselineSum{id: b.baseIDs[i]}
	copy(bs.sum[:], b.baseSums[i*sha256.Size:])
	return bs
}

// newPromotedBody holds c under ref (rules.Compiled.Hold), its plan taken
// out and its JSON kept beside the baseline.
func newPromotedBody(c *rules.Compiled, ref string, base []baselineSum) *promotedBody {
	c = c.Hold(ref) // a copy of its own: its Raw and Plan change below
	b := &promotedBody{compiled: c}
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

// decodedPlan returns the body's plan (nil if it has none), as it was
// encoded when the body was promoted or loaded.
func (b *promotedBody) decodedPlan() *pilotage.Plan {
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

// baselineSum is one referenced entry's load-bearing fields, hashed: all
// drift detection needs in memory (the fields themselves are stored).
type baselineSum struct {
	id  string
	sum [sha256.Size]byte
}

func sumBaseline(b baselineField) [sha256.Size]byte { return sha256.Sum256(baselineJSON(b)) }

// baselineSums hashes a baseline, sorted by id.
func baselineSums(base map[string]baselineField) []baselineSum {
	out := make([]baselineSum, 0, len(base))
	for id, b := range base {
		out = append(out, baselineSum{id, sumBaseline(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Shared by every automation entry (entries are never modified in place):
// a house with thousands of rules holds one copy, not thousands.
var (
	noParamsSchema      = json.RawMessage(`{"additionalProperties":false,"type":"object"}`) // canonical
	automationLanguages = []string{rules.Language}
)

// automationEntry builds the catalog entry of a promoted program. Its risk is
// the body's aggregate: never safer than what it contains.
func automationEntry(ref string, c *rules.Compiled, plan *pilotage.Plan) *pilotage.Entry {
	schema := noParamsSchema
	if len(bytes.TrimSpace(c.Params())) > 0 {
		schema = canonicalJSON(c.Params())
	}
	hints := pilotage.RiskHints{ReadOnly: true}
	if plan != nil {
		hints = plan.MaxRiskHints
	}
	// The tag and a default description are cut from one string, and the
	// tag list is allocated with the entry: a house holds one entry per
	// promoted program, and each object is work for the collector.
	name := c.Name()
	tag, desc := "rule:"+name, c.Description()
	if desc == "" {
		both := "rule:" + name + "promoted automation/1 program " + name
		tag, desc = both[:len("rule:")+len(name)], both[len("rule:")+len(name):]
	}
	a := &automationEntryAlloc{}
	a.tags[0] = tag
	en := &a.entry
	*en = pilotage.Entry{
		ID: ref, Kind: pilotage.KindAutomation, Name: name, Description: desc,
		Tags: a.tags[:], Callable: true, InputSchema: schema,
		Risk: pilotage.RiskOf(hints), RiskHints: hints, Languages: automationLanguages,
	}
	en.Revision = en.ContentHash()
	return en
}

// automationEntryAlloc is an automation entry allocated with its tags.
type automationEntryAlloc struct {
	entry pilotage.Entry
	tags  [1]string
}

// promotion is a program ready to be promoted: what storage keeps of it
// and its catalog entry. Preparing it changes nothing in memory or
// storage; commit registers it once storage holds it, so a deploy that
// storage refused leaves no automation behind for another rule to call.
type promotion struct {
	prog  storage.Program
	entry *pilotage.Entry
	base  map[string]baselineField
	held  *promotedBody   // the body already held under this ref, if any
	c     *rules.Compiled // the program held under ref (rules.Compiled.Hold)
}

// preparePromotion computes c's program_ref, stored form and entry.
func (e *Engine) preparePromotion(p *Principal, c *rules.Compiled) *promotion {
	ref := programRef(c)
	c = c.Hold(ref)
	base := map[string]baselineField{}
	for i, en := range c.Entries {
		base[c.Refs[i]] = baselineOf(en)
	}
	bj, _ := json.Marshal(base)
	// A body promoted before (redeploying a program_ref) keeps its plan
	// encoded, not in c: take it from there, and keep the body held.
	plan, held := c.Plan, e.heldBody(ref)
	if plan == nil && held != nil {
		plan = held.decodedPlan()
	}
	pj, _ := json.Marshal(plan)
	en := automationEntry(ref, c, plan)
	hj, _ := json.Marshal(en.RiskHints)
	prog := storage.Program{
		Ref: ref, Name: c.Name(), Principal: p.Name, Body: canonicalJSON(c.Raw), Plan: pj,
		Params: en.InputSchema, RiskHints: hj, Risk: string(en.Risk), Baseline: bj, CreatedAt: e.Now(),
	}
	return &promotion{prog: prog, entry: en, base: base, held: held, c: c}
}

// commitPromotion holds the promoted body and registers its catalog entry;
// call it only once storage committed the program. It returns the held
// program, for an installed rule to keep: a body promoted before is the
// same program (refs are content-addressed), so a redeploy keeps that one.
func (e *Engine) commitPromotion(pr *promotion) *rules.Compiled {
	b := pr.held
	if b == nil {
		b = e.rememberBody(pr.prog.Ref, newPromotedBody(pr.c, pr.prog.Ref, baselineSums(pr.base)))
	}
	e.cat.AddAutomation(pr.entry, b.compiled)
	return b.compiled
}

// rememberBody holds b as ref's body, unless one is held already (refs
// are content-addressed: it is the same program), and returns the held one.
func (e *Engine) rememberBody(ref string, b *promotedBody) *promotedBody {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.bodies[ref]; old != nil {
		return old
	}
	if e.bodies == nil {
		e.bodies = map[string]*promotedBody{}
	}
	e.bodies[ref] = b
	return b
}

// storedBody is the promoted body of a stored program compiled as c.
func storedBody(pr storage.Program, c *rules.Compiled) *promotedBody {
	var base map[string]baselineField
	_ = json.Unmarshal(pr.Baseline, &base)
	return newPromotedBody(c, pr.Ref, baselineSums(base))
}

// heldBody returns ref's body if it is held in memory.
func (e *Engine) heldBody(ref string) *promotedBody {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bodies[ref]
}

// body returns the compiled promoted body of ref, compiling a stored
// version that is not held in memory (nil if there is none).
func (e *Engine) body(ref string) *promotedBody {
	b := e.heldBody(ref)
	if b != nil || e.store == nil {
		return b
	}
	return e.loadBody(ref)
}

// loadBody compiles a stored promoted program no installed rule uses (a
// rollback target, an older version) on first use, and keeps it. Start-up
// holds only the installed versions in memory: a house's version history
// grows with every redeploy, and every body held is work for the collector.
func (e *Engine) loadBody(ref string) *promotedBody {
	pr, err := e.store.GetProgram(context.Background(), ref)
	if err != nil {
		return nil
	}
	c, err := e.compileStored(pr)
	if err != nil {
		e.log.Warn("promoted program no longer compiles", "ref", ref, "err", err)
		return nil
	}
	return e.rememberBody(ref, storedBody(pr, c)) // or the one another caller compiled meanwhile
}

// recordedBody is any promoted body by id, whoever may see it: what a
// recorded program (an installed rule re-validated at start-up, a stored
// promotion) called when it was checked.
func (e *Engine) recordedBody(id string) (*rules.Compiled, bool) {
	if b := e.body(id); b != nil {
		return b.compiled, true
	}
	return nil, false
}

// automationBody resolves a visible automation entry to its compiled body.
func (e *Engine) automationBody(p *Principal, id string) (*rules.Compiled, bool) {
	// Every call step asks (an action id among them): only an automation
	// entry may cost a load.
	if en, ok := e.cat.View(p).Get(id); !ok || en.Kind != pilotage.KindAutomation {
		return nil, false
	}
	b := e.body(id)
	if b == nil {
		return nil, false
	}
	return b.compiled, true
}

// baselineDrift compares a promoted body's baseline with the caller's
// current catalog; "" means no drift.
func (e *Engine) baselineDrift(p *Principal, ref string) string {
	b := e.body(ref)
	if b == nil {
		return "the promoted program is not available"
	}
	v := e.cat.View(p)
	for i := range b.baseIDs {
		bs := b.baseline(i)
		en, ok := v.Get(bs.id)
		if !ok {
			return "referenced entry " + quote(bs.id) + " no longer exists"
		}
		if sumBaseline(baselineOf(en)) != bs.sum {
			return "referenced entry " + quote(bs.id) + " changed since promotion"
		}
	}
	return ""
}

// loadAutomations compiles every stored promoted program back into memory
// and the catalog (at start-up).
func (e *Engine) loadAutomations(ctx context.Context) error {
	progs, err := e.store.ListPrograms(ctx, "")
	if err != nil {
		return fmt.Errorf("engine: loading promoted programs: %w", err)
	}
	// Bodies may call other automations: load in creation order (oldest
	// first), which is dependency order since a callee is promoted first.
	sort.Slice(progs, func(i, j int) bool { return progs[i].CreatedAt.Before(progs[j].CreatedAt) })
	l := &loader{e: e, byRef: make(map[string]storage.Program, len(progs)), installed: map[string]bool{}, done: map[string]bool{}}
	if list, err := e.store.ListRules(ctx); err == nil {
		for _, r := range list {
			l.installed[r.Ref] = true
		}
	}
	for _, pr := range progs {
		l.byRef[pr.Ref] = pr
	}
	for _, pr := range progs {
		l.register(pr)
	}
	return nil
}

// loader registers stored promoted programs at start-up.
type loader struct {
	e         *Engine
	byRef     map[string]storage.Program
	installed map[string]bool
	done      map[string]bool
}

// register compiles pr and registers its catalog entry, after the
// automations it calls: an automation's reach (who may see it) is computed
// from its callees' when it is registered. Creation order is normally
// dependency order, but creation times come from a wall clock, which may
// have stepped back.
func (l *loader) register(pr storage.Program) {
	if l.done[pr.Ref] {
		return
	}
	l.done[pr.Ref] = true
	e := l.e
	known := e.heldBody(pr.Ref)
	var c *rules.Compiled
	var plan *pilotage.Plan
	if known != nil { // compiled already as another program's callee
		c, plan = known.compiled, known.decodedPlan()
	} else {
		var err error
		if c, err = e.compileStored(pr); err != nil {
			e.log.Warn("promoted program no longer compiles; its rule will be marked broken", "ref", pr.Ref, "err", err)
			return
		}
		c = c.Hold(pr.Ref)
		plan = c.Plan
	}
	for i, id := range c.Refs {
		if i < len(c.Entries) && c.Entries[i] != nil && c.Entries[i].Kind == pilotage.KindAutomation {
			if callee, ok := l.byRef[id]; ok {
				l.register(callee)
			}
		}
	}
	en := automationEntry(pr.Ref, c, plan)
	if l.installed[pr.Ref] && known == nil {
		e.rememberBody(pr.Ref, storedBody(pr, c))
	}
	e.cat.AddAutomation(en, c)
}

// compileStored recompiles a stored body. It validates against the full
// (owner) catalog as recorded: expressions and structure are what matters;
// drift against the live catalog is checked at firing time.
func (e *Engine) compileStored(pr storage.Program) (*rules.Compiled, error) {
	cat := &baselineCatalog{base: map[string]*pilotage.Entry{}}
	var base map[string]baselineField
	if err := json.Unmarshal(pr.Baseline, &base); err != nil {
		return nil, fmt.Errorf("bad baseline: %w", err)
	}
	for id, b := range base {
		cat.base[id] = &pilotage.Entry{ID: id, Kind: b.Kind, Callable: pilotage.KindCallable(b.Kind),
			InputSchema: b.InputSchema, OutputSchema: b.OutputSchema, Risk: b.Risk, RiskHints: b.RiskHints, Languages: b.Languages}
	}
	for id := range cat.base {
		cat.ids = append(cat.ids, id)
	}
	sort.Strings(cat.ids)
	res, err := rules.Validate(pr.Body, cat, rules.ValidateOptions{
		Limits: e.cfg.Limits, HasLocation: true, Zone: e.cfg.TimeZone, Cache: e.rules, Recorded: true,
		Automation: e.recordedBody,
	})
	if err != nil {
		return nil, err
	}
	if !res.Valid {
		var msgs []string
		for _, d := range res.Diagnostics {
			if d.Severity == pilotage.SeverityError {
				msgs = append(msgs, d.Path+": "+d.Message)
			}
		}
		return nil, fmt.Errorf("invalid: %s", strings.Join(msgs, "; "))
	}
	return res.Compiled, nil
}

// baselineCatalog is a rules.Catalog made of a promotion baseline.
type baselineCatalog struct {
	base map[string]*pilotage.Entry
	ids  []string
}

func (b *baselineCatalog) Get(id string) (*pilotage.Entry, bool) { e, ok := b.base[id]; return e, ok }
func (b *baselineCatalog) IDs() []string                         { return b.ids }
func (b *baselineCatalog) Version() string                       { return "" }
