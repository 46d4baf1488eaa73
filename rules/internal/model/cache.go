package model

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"

	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"weak"

	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Cache is what rules reuses from one validation or run to the next:
// prepared expr configurations, compiled expression programs shared by
// source, compiled catalog schemas, the table run forms share their equal
// parts through (intern.go), and pools of expression environments and
// VMs. The engine makes one and hands it to Validate
// (ValidateOptions.Cache) and Run (RunInput.Cache); rules keeps no state
// of its own between calls. A nil *Cache reuses nothing: everything
// is made anew, with the same results.
//
// Every table of a Cache is a memo: bounded, and started over when full.
// Reuse is an optimization, so losing it costs time, never correctness.
type Cache struct {
	configs memo[uint, *sync.Pool]                  // node bound → pool of prepared *conf.Config
	progs   memo[exprKey, weak.Pointer[vm.Program]] // compiled programs by source
	schemas memo[string, *jsonschema.Schema]        // compiled catalog schemas by text
	shared  memo[shareKey, any]                     // parts of run forms (intern.go)
	envs    sync.Pool                               // *envVars
	vms     sync.Pool                               // *vm.VM
}

// Bounds of a Cache's memos.
const (
	maxConfigs = 16      // distinct expression node bounds (one in practice)
	maxProgs   = 1 << 16 // compiled expression programs (weak: they keep nothing alive)
	maxSchemas = 4096    // compiled catalog schemas
	maxShared  = 1 << 16 // shared parts of run forms
)

// NewCache makes an empty Cache.
func NewCache() *Cache {
	k := &Cache{}
	k.configs.max, k.progs.max, k.schemas.max, k.shared.max = maxConfigs, maxProgs, maxSchemas, maxShared
	return k
}

// memo is a bounded table, the one bound and reset policy of a Cache: it
// holds at most max entries, and a full one starts over (what it handed
// out stays valid where it is used; only reuse is lost). It is safe for
// concurrent use.
type memo[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	m   map[K]V
}

func (t *memo[K, V]) get(k K) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[k]
	return v, ok
}

// add stores v under k unless k holds a value that keep accepts (keep nil
// accepts any), and returns the value k holds.
func (t *memo[K, V]) add(k K, v V, keep func(V) bool) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.m[k]; ok && (keep == nil || keep(old)) {
		return old
	}
	if t.m == nil || len(t.m) >= t.max {
		t.m = make(map[K]V)
	}
	t.m[k] = v
	return v
}

// drop deletes k when its value is one gone accepts.
func (t *memo[K, V]) drop(k K, gone func(V) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[k]; ok && gone(v) {
		delete(t.m, k)
	}
}

// config lends a prepared expr configuration for maxNodes; put it back
// with the returned function. A configuration is used by one compilation
// at a time: expr's checker fills its type cache.
func (k *Cache) config(maxNodes uint) (*conf.Config, func()) {
	if k == nil {
		return newExprConfig(maxNodes), func() {}
	}
	pool, ok := k.configs.get(maxNodes)
	if !ok {
		pool = k.configs.add(maxNodes, &sync.Pool{New: func() any { return newExprConfig(maxNodes) }}, nil)
	}
	c := pool.Get().(*conf.Config)
	return c, func() { pool.Put(c) }
}

type exprKey struct {
	src      string
	maxNodes uint
}

// program returns the program compiled before from src under maxNodes,
// if one is still in use somewhere.
func (k *Cache) program(key exprKey) *vm.Program {
	if k == nil {
		return nil
	}
	if wp, ok := k.progs.get(key); ok {
		return wp.Value()
	}
	return nil
}

// keepProgram lets later compilations of the same source share prog. The
// entry is weak: a program nothing uses any more is collected, and its
// entry removed.
func (k *Cache) keepProgram(key exprKey, prog *vm.Program) {
	if k == nil {
		return
	}
	wp := weak.Make(prog)
	alive := func(old weak.Pointer[vm.Program]) bool { return old.Value() != nil }
	if k.progs.add(key, wp, alive) != wp {
		return
	}
	runtime.AddCleanup(prog, func(key exprKey) {
		k.progs.drop(key, func(v weak.Pointer[vm.Program]) bool { return v == wp })
	}, key)
}

// schema compiles a catalog entry's schema; nil when it does not compile.
// Catalogs repeat the same schemas for every device of a model, and
// compiling one (which checks it against its metaschema) costs far more
// than a validation: compiled schemas are immutable, so they are shared.
func (k *Cache) Schema(raw json.RawMessage) *jsonschema.Schema {
	if k != nil {
		if s, ok := k.schemas.get(string(raw)); ok {
			return s
		}
	}
	var s *jsonschema.Schema
	if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw)); err == nil {
		s, _ = CompileSchema(doc)
	}
	if k != nil {
		k.schemas.add(string(raw), s, nil)
	}
	return s
}

// env lends an expression environment holder (see envVars).
func (k *Cache) env() *envVars {
	if k != nil {
		if h, ok := k.envs.Get().(*envVars); ok {
			return h
		}
	}
	return newEnvVars()
}

func (k *Cache) putEnv(h *envVars) {
	if k != nil {
		k.envs.Put(h)
	}
}

// vm lends an expr VM (a VM resets its stack, scopes and memory count on
// every Run): pooled, an evaluation spares an allocation and its zeroing.
func (k *Cache) vm() *vm.VM {
	if k != nil {
		if v, ok := k.vms.Get().(*vm.VM); ok {
			return v
		}
	}
	return new(vm.VM)
}

func (k *Cache) putVM(v *vm.VM) {
	if k != nil {
		k.vms.Put(v)
	}
}

// compileSchema compiles a JSON Schema value with no external loading.
func CompileSchema(doc any) (*jsonschema.Schema, error) { return CompileSchemaAt(doc, "") }

// compileSchemaAt compiles the subschema at the JSON Pointer ptr of doc
// ("" = doc itself). Formats are asserted: "duration" is automation/1's
// (ParseDuration: "90s", "2m", "PT2M"), the others JSON Schema's.
func CompileSchemaAt(doc any, ptr string) (sch *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			sch, err = nil, fmt.Errorf("schema compiler failed: %v", r)
		}
	}()
	c := jsonschema.NewCompiler()
	c.UseLoader(denyLoader{})
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "duration", Validate: durationFormat})
	if err := c.AddResource("mem:///schema.json", doc); err != nil {
		return nil, err
	}
	loc := "mem:///schema.json"
	if ptr != "" {
		loc += "#" + ptr
	}
	return c.Compile(loc)
}

// denyLoader refuses every external schema reference: programs are
// attacker-controlled and validation must touch nothing outside them.
type denyLoader struct{}

func (denyLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not allowed (%s)", url)
}

// durationFormat is the "duration" format: a string ParseDuration reads.
func durationFormat(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	_, err := clock.ParseDuration(s)
	return err
}
