// Package bounds holds what bounds the firings of rules: the slots they
// run in at once (Pool), each principal's firings running at once (Live),
// the expression operations they use over time (Share), and how long a
// chain of rule-caused firings may grow (Chains).
package bounds

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/internal/bucket"
)

// Pool runs firings, each on a goroutine of its own (goroutines are not
// reused: the runtime sizes a new one's stack from the ones before).
//
// At most MaxRunning limited tasks (firings whose body neither waits nor
// sleeps: they only wait for their commands' acknowledgements) run at
// once; the others wait their turn in order, as a few words in backlog
// rather than as goroutines. Past the broker's and the processors'
// capacity the acknowledgements come late and firings pile up: thousands
// of goroutines, each with its stack, all runnable at once when a burst
// of acknowledgements arrives, ahead of the connection's reader in the
// scheduler's queues (figures: docs/performance.md). Bodies with delays and waits are not limited: they
// may take minutes.
type Pool struct {
	active atomic.Int32 // goroutines running a Task

	mu      sync.Mutex
	running int      // limited tasks running
	backlog []queued // limited tasks waiting for a slot, oldest first
}

// queued is a limited Task waiting for a slot, and since when.
type queued struct {
	t  Task
	at time.Time
}

// Load is how the firing slots are used now: firings running, and
// firings waiting for a slot with the oldest's wait. A standing wait means
// events are answered late (the engine is past its capacity).
type Load struct {
	Running      int     `json:"running"`
	Slots        int     `json:"slots"`
	Waiting      int     `json:"waiting"`
	OldestWaitMS float64 `json:"oldest_wait_ms"`
}

// Load reports how the slots are used now.
func (w *Pool) Load() Load {
	w.mu.Lock()
	defer w.mu.Unlock()
	fl := Load{Running: w.running, Slots: MaxRunning, Waiting: len(w.backlog)}
	if len(w.backlog) > 0 {
		fl.OldestWaitMS = float64(time.Since(w.backlog[0].at).Microseconds()) / 1000
	}
	return fl
}

// Task is work for the pool (a *firing: no closure to allocate per run).
type Task interface {
	// Do runs the Task. A limited one holds its slot until it ends and
	// calls Release, once: after Do returned when it goes on without its
	// goroutine (a firing waiting for its command's acknowledgement).
	Do()
	Limited() bool // counts against MaxRunning
}

// MaxRunning bounds the limited tasks running at once.
const MaxRunning = 512

// New makes an empty pool.
func New() *Pool { return &Pool{} }

// Run runs f on a goroutine of its own; a limited Task waits in the
// backlog while MaxRunning others run.
func (w *Pool) Run(f Task) {
	if w.admit(f) {
		w.start(f)
	}
}

// RunHere runs f on the calling goroutine: for a Task that waits for
// nothing (see sched.Rule.here), a goroutine of its own would cost more (a
// thread wake-up, a crossing between threads) than the Task itself.
func (w *Pool) RunHere(f Task) {
	if w.admit(f) {
		f.Do()
	}
}

// admit reports whether f may run now; a limited Task takes a slot, or
// waits in the backlog for one.
func (w *Pool) admit(f Task) bool {
	if !f.Limited() {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running >= MaxRunning {
		w.backlog = append(w.backlog, queued{f, time.Now()})
		return false
	}
	w.running++
	return true
}

// start runs f, which has its slot, on a goroutine of its own.
func (w *Pool) start(f Task) {
	w.active.Add(1)
	go w.do(f)
}

func (w *Pool) do(f Task) {
	defer w.active.Add(-1)
	f.Do()
}

// Release is a limited Task's end: the oldest waiting one takes its slot,
// or the slot is freed.
func (w *Pool) Release() {
	w.mu.Lock()
	if len(w.backlog) == 0 {
		w.running--
		w.mu.Unlock()
		return
	}
	f := w.backlog[0].t
	w.backlog[0] = queued{}
	w.backlog = w.backlog[1:]
	if len(w.backlog) == 0 {
		w.backlog = nil // let the array go
	}
	w.mu.Unlock()
	w.start(f)
}

// Active is how many goroutines run a Task now.
func (w *Pool) Active() int { return int(w.active.Load()) }

// Rules can fire each other, or themselves, without end. A firing's depth
// counts the rule-caused hops that led to it: a change of a device a
// firing of depth d commanded within Window fires at depth d+1; any other
// firing is at depth 0 (a sensor, a person, a schedule). The engine stops
// a rule whose firing would be too deep.

// Window is how long after a command a change of its device counts as
// caused by it.
const Window = 2 * time.Second

// chainMark is the last command a firing sent to one device.
type chainMark struct {
	depth int // the commanding firing's depth + 1
	at    time.Time
}

// Chains records the depth of the firing that last commanded each device,
// and each topic a command went to; every rule's firings share it. The
// topic catches what the device id does not: another entity on the
// device's state topic (a Home Assistant sensor on zigbee2mqtt/plug), a
// sensor on a notification channel's topic, a command published on
// another device's availability topic.
type Chains struct {
	mu       sync.Mutex
	byDevice map[string]chainMark
	byTopic  map[string]chainMark // a command's topic, and that topic without "/set"
}

// Wrote notes that a firing of depth depth commanded entry id's device,
// on topic ("" when unknown, or a webhook).
func (c *Chains) Wrote(id, topic string, depth int, at time.Time) {
	m := chainMark{depth: depth + 1, at: at}
	c.mu.Lock()
	if c.byDevice == nil {
		c.byDevice, c.byTopic = map[string]chainMark{}, map[string]chainMark{}
	}
	c.byDevice[access.DeviceOf(id)] = m
	if topic != "" {
		c.byTopic[topic] = m
		// Zigbee2MQTT: <base>/<device>/set and /set/<attribute> come back
		// on <base>/<device>.
		if base, ok := strings.CutSuffix(topic, "/set"); ok {
			c.byTopic[base] = m
		} else if i := strings.Index(topic, "/set/"); i > 0 {
			c.byTopic[topic[:i]] = m
		}
	}
	c.mu.Unlock()
}

// DepthOf is the depth of a firing by a change of entry id, from a message
// on topic, at time at.
func (c *Chains) DepthOf(id, topic string, at time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := 0
	if m, ok := c.byDevice[access.DeviceOf(id)]; ok && at.Sub(m.at) <= Window {
		d = m.depth
	}
	if m, ok := c.byTopic[topic]; ok && topic != "" && at.Sub(m.at) <= Window {
		d = max(d, m.depth)
	}
	return d
}

// Each run is bounded by MaxRunOps, but a rule firing hundreds of times
// at once (mode parallel) multiplied that by its firings: a rule any
// deployer may install took the house's two cores for minutes. A rule's
// firings share one Share of operations instead, and a principal's rules
// together PrincipalShares times that, so many heavy rules of one
// principal (an assistant's) do not add up to the cores either.
const (
	ShareRefill     = 10 * time.Second // to refill a whole share
	PrincipalShares = 4
)

// Share is a bucket of expression operations: at most a run's MaxRunOps
// (its capacity, given at each take), refilled over ShareRefill.
type Share struct {
	mu  sync.Mutex
	b   bucket.Bucket
	max float64
}

// take grants up to whole operations from s at now.
func (s *Share) take(now time.Time, whole int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max = float64(whole)
	grant := max(int(s.b.Level(now, s.max/ShareRefill.Seconds(), s.max)), 0)
	s.b.Tokens -= float64(grant)
	return grant
}

// give returns what a run was granted and did not use.
func (s *Share) give(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.b.Tokens = min(s.b.Tokens+float64(n), s.max)
	s.mu.Unlock()
}

// Shares holds the shares of the principals' rules, by principal name.
type Shares struct{ m sync.Map }

// Of is the share of the rules principal installed.
func (ss *Shares) Of(principal string) *Share {
	if v, ok := ss.m.Load(principal); ok {
		return v.(*Share)
	}
	v, _ := ss.m.LoadOrStore(principal, &Share{})
	return v.(*Share)
}

// Grant is what one run may use: what both its rule's share and its
// principal's granted.
type Grant struct {
	rule, principal *Share
	Ops             int
}

// TakeOps grants a run up to full operations (its MaxRunOps) from its
// rule's share and its principal's (PrincipalShares × full).
func TakeOps(rule, principal *Share, now time.Time, full int) Grant {
	byRule := rule.take(now, full)
	ops := principal.take(now, PrincipalShares*full)
	if byRule < ops {
		principal.give(ops - byRule)
		ops = byRule
	} else {
		rule.give(byRule - ops)
	}
	return Grant{rule, principal, ops}
}

// Return gives back to both shares what the run did not use of g.
func (g Grant) Return(used int) {
	g.rule.give(g.Ops - used)
	g.principal.give(g.Ops - used)
}

// Live counts each principal's firings running or queued at once (a
// firing waiting in a delay or wait step is running; a queued one holds
// its trigger's value), at most Max of one principal's and AdminMax of an
// admin's (the owner's, whose buggy rule must not take the house down
// either): what they hold in memory together is then at most that many
// runs' bounds.
type Live struct {
	Max, AdminMax int64
	counts        sync.Map // principal name → *atomic.Int64
	refused       atomic.Uint64
}

// Acquire takes one of principal's live firings (admin: principal is an
// admin, bounded by AdminMax); when its bound's worth are running it counts
// a refusal and says how many run and how many refusals there were in all.
func (l *Live) Acquire(principal string, admin bool) (running int64, refused uint64, ok bool) {
	limit := l.Max
	if admin {
		limit = l.AdminMax
	}
	c := l.count(principal)
	for {
		n := c.Load()
		if n >= limit {
			return n, l.refused.Add(1), false
		}
		if c.CompareAndSwap(n, n+1) {
			return n + 1, 0, true
		}
	}
}

// Release gives back one of principal's live firings that ended.
func (l *Live) Release(principal string) { l.count(principal).Add(-1) }

// Running is how many of principal's firings run now.
func (l *Live) Running(principal string) int64 { return l.count(principal).Load() }

// Refused counts the firings Acquire refused.
func (l *Live) Refused() uint64 { return l.refused.Load() }

func (l *Live) count(principal string) *atomic.Int64 {
	if c, ok := l.counts.Load(principal); ok {
		return c.(*atomic.Int64)
	}
	c, _ := l.counts.LoadOrStore(principal, new(atomic.Int64))
	return c.(*atomic.Int64)
}
