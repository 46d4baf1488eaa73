package core

import "time"

// Limits are the named budgets of validation and execution (spec §10.1).
// They live in one place; DefaultLimits is what the server uses unless the
// configuration overrides a value.
type Limits struct {
	// Requests (the MCP and web bindings), checked before any parsing work.
	MaxRequestBytes int // HTTP request body (413 beyond), and one stdio line
	MaxArgBytes     int // each string argument of a tool (ids, q, cursor, names, keys)
	MaxInputBytes   int // execute's input and context (JSON bytes): what a run may store of them

	// Validation.
	MaxProgramBytes int           // raw program size
	MaxNodes        int           // JSON values in the program
	MaxDepth        int           // nesting of steps (if/choose/repeat)
	MaxExprNodes    uint          // AST nodes per expression (expr MaxNodes)
	MaxExprLen      int           // characters per expression
	ValidateWall    time.Duration // wall time of one validation

	// Execution.
	MaxSteps      int           // trace entries per run
	MaxIterations int           // iterations per loop activation (and while/until max cap)
	MaxWall       time.Duration // wall time of one run (virtual time in a test run)
	MaxCallDepth  int           // nested promoted-automation calls
	MemoryBudget  uint          // expr VM memory budget per evaluation
	MaxConcurrent int           // the largest "max" a queued or parallel rule may declare
	MaxSetValues  int           // JSON values set steps store in one run (each value copied, nested at most MaxValueDepth)

	// Bytes, measured as the compact JSON a value encodes to.
	MaxValueBytes int // one string, list or object an expression, template or set step makes
	MaxEvalBytes  int // everything one evaluation builds (strings, lists, objects), summed
	MaxRunBytes   int // what one run records: trace inputs, outputs and decisions, call records

	// CPU: operations one evaluation may do (each iteration of a loop
	// builtin, and each builtin or operator by the size of its input), the
	// operations all the evaluations of one run may do together, and the
	// real time a test run may take (its World's clock is virtual).
	MaxEvalOps     int
	MaxRunOps      int
	MaxTestRunWall time.Duration

	// Serving: what clients may hold open (HTTP), beyond: refused or ended.
	MaxConnections          int           // HTTP connections open at once
	MaxStreams              int           // event streams open at once (GET /mcp, the web UI's /events)
	MaxStreamsPerPrincipal  int           // event streams one principal may hold open
	MaxSessions             int           // MCP sessions live at once
	MaxSessionsPerPrincipal int           // MCP sessions one principal may hold
	SessionIdle             time.Duration // an MCP session unused this long (no open stream) ends
	MaxServedRunBytes       int           // bytes of stored run records being served at once (trace, run pages)

	// Storage: what one principal may keep stored within the retention.
	MaxStoredTestRuns  int // test runs kept
	MaxStoredTestBytes int // bytes of test-run records kept
	// Firings are kept while they fit these too, oldest trimmed first,
	// never a rule's newest of each status.
	MaxStoredRuleBytes   int // bytes of one rule's stored firings
	MaxStoredFiringBytes int // bytes of all the stored firings of one principal's rules (not an admin's)

	// Rules: how many one principal (not an admin) keeps installed, and
	// how many firings of its rules run at once (each may hold up to
	// MaxEvalBytes and MaxRunBytes in memory); an admin's (the owner's)
	// firings have a bound of their own, higher.
	MaxRulesPerPrincipal       int
	MaxLiveFiringsPerPrincipal int
	MaxLiveFiringsAdmin        int
}

// MaxValueDepth is how deep a value a set step stores may nest (not
// configurable: SQLite's JSON functions refuse deeper documents).
const MaxValueDepth = 64

// DefaultLimits are the budgets in force unless configured otherwise.
var DefaultLimits = Limits{
	MaxRequestBytes: 1 << 20,
	MaxArgBytes:     4 << 10,
	MaxInputBytes:   64 << 10,

	MaxProgramBytes: 256 << 10,
	MaxNodes:        20000,
	MaxDepth:        16,
	MaxExprNodes:    500,
	MaxExprLen:      2000,
	ValidateWall:    2 * time.Second,

	MaxSteps:      10000,
	MaxIterations: 1000,
	MaxWall:       24 * time.Hour,
	MaxCallDepth:  4,
	MemoryBudget:  1 << 20,
	MaxConcurrent: 1000,
	MaxSetValues:  100000,

	// A house rule's values are short texts and small objects; 1 MiB
	// holds any notification text or device payload many times over.
	// One evaluation may build a few of those (a list of them, a join);
	// a run's stored envelope (trace and outputs, kept 30 days) is bounded
	// by MaxRunBytes: 4 MiB is 10,000 full trace entries of 400 bytes.
	MaxValueBytes: 1 << 20,
	MaxEvalBytes:  4 << 20,
	MaxRunBytes:   4 << 20,

	// An operation is about one step of the expression VM (25-50 ns of
	// CPU; what each operation counts: model/exprops.go): a million is a
	// loop over 300 items nested in one over 300, about 50 ms of CPU.
	MaxEvalOps: 1_000_000,
	// MaxSteps evaluations each under MaxEvalOps would keep a core busy
	// for minutes; a run's evaluations together get about a quarter
	// second of CPU, a thousand times what a household rule's run uses.
	MaxRunOps:      5_000_000,
	MaxTestRunWall: 10 * time.Second,

	// A browser holds one stream per open page, an assistant one per
	// session; a house has a few of each. A session costs about 10 KB.
	MaxConnections:          512,
	MaxStreams:              128,
	MaxStreamsPerPrincipal:  16,
	MaxSessions:             1024,
	MaxSessionsPerPrincipal: 64,
	SessionIdle:             time.Hour,
	// Serving a stored run costs up to 16 times its record (the engine's
	// readCost): 64 MiB is one read of the largest run (MaxRunBytes) at
	// once, or hundreds of small ones.
	MaxServedRunBytes: 64 << 20,

	// A test run's record is a few KB; 64 MiB is thousands of them, or 16
	// at the MaxRunBytes bound.
	MaxStoredTestRuns:  1000,
	MaxStoredTestBytes: 64 << 20,
	// A house rule's firing record is a few KB, so 50 per outcome fit
	// 16 MiB many times over; a principal's 256 MiB holds hundreds of
	// such rules, and bounds what rules with large traces may keep.
	MaxStoredRuleBytes:   16 << 20,
	MaxStoredFiringBytes: 256 << 20,

	// A household has tens of rules; an assistant deploying for a guest
	// has no need of hundreds.
	MaxRulesPerPrincipal: 200,
	// A household's rules run a few firings at once, some waiting in a
	// delay; 64 at a few MiB each is what one guest may hold.
	MaxLiveFiringsPerPrincipal: 64,
	// The owner's rules are the household's: a real house never runs
	// more than tens of firings at once, but the owner's assistant may
	// write a buggy rule (a parallel one that waits, fired by a chatty
	// sensor) and the house must not fall over. 128 firings holding a
	// 1 MB value each took a server from 37 MB to 202 MB, holding two
	// (the most a firing records within MaxRunBytes) 309 MB
	// (docs/security.md); 128 × MaxRunBytes is 512 MiB, room on a 1 GB
	// Raspberry Pi beside the rest of the house.
	MaxLiveFiringsAdmin: 128,
}

// WithDefaults is l with every unset bound (zero or negative) taken from
// DefaultLimits: the one place a Limits gets its defaults, whoever reads
// it (validation, runs, the MCP transport, the engine).
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	for _, f := range [...]struct {
		v   *int
		def int
	}{
		{&l.MaxRequestBytes, d.MaxRequestBytes}, {&l.MaxArgBytes, d.MaxArgBytes}, {&l.MaxInputBytes, d.MaxInputBytes},
		{&l.MaxProgramBytes, d.MaxProgramBytes}, {&l.MaxNodes, d.MaxNodes}, {&l.MaxDepth, d.MaxDepth},
		{&l.MaxExprLen, d.MaxExprLen}, {&l.MaxSteps, d.MaxSteps}, {&l.MaxIterations, d.MaxIterations},
		{&l.MaxCallDepth, d.MaxCallDepth}, {&l.MaxConcurrent, d.MaxConcurrent}, {&l.MaxSetValues, d.MaxSetValues},
		{&l.MaxValueBytes, d.MaxValueBytes}, {&l.MaxEvalBytes, d.MaxEvalBytes}, {&l.MaxRunBytes, d.MaxRunBytes},
		{&l.MaxEvalOps, d.MaxEvalOps}, {&l.MaxRunOps, d.MaxRunOps}, {&l.MaxConnections, d.MaxConnections}, {&l.MaxStreams, d.MaxStreams},
		{&l.MaxStreamsPerPrincipal, d.MaxStreamsPerPrincipal}, {&l.MaxSessions, d.MaxSessions},
		{&l.MaxSessionsPerPrincipal, d.MaxSessionsPerPrincipal}, {&l.MaxServedRunBytes, d.MaxServedRunBytes},
		{&l.MaxStoredTestRuns, d.MaxStoredTestRuns}, {&l.MaxStoredTestBytes, d.MaxStoredTestBytes},
		{&l.MaxStoredRuleBytes, d.MaxStoredRuleBytes}, {&l.MaxStoredFiringBytes, d.MaxStoredFiringBytes},
		{&l.MaxRulesPerPrincipal, d.MaxRulesPerPrincipal}, {&l.MaxLiveFiringsPerPrincipal, d.MaxLiveFiringsPerPrincipal},
		{&l.MaxLiveFiringsAdmin, d.MaxLiveFiringsAdmin},
	} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	for _, f := range [...]struct{ v, def *time.Duration }{
		{&l.ValidateWall, &d.ValidateWall}, {&l.MaxWall, &d.MaxWall}, {&l.MaxTestRunWall, &d.MaxTestRunWall},
		{&l.SessionIdle, &d.SessionIdle},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.MaxExprNodes == 0 {
		l.MaxExprNodes = d.MaxExprNodes
	}
	if l.MemoryBudget == 0 {
		l.MemoryBudget = d.MemoryBudget
	}
	return l
}
