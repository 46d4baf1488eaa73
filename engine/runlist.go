package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// Run kinds: what started a run.
const (
	KindDeploy = storage.KindDeploy
	KindTest   = storage.KindTest
	KindFiring = storage.KindFiring
	KindManual = storage.KindManual // a program run once by hand (the web UI's controls)
)

// ErrBadCursor reports a RunFilter.Before or After that is neither a
// stored run nor a well-formed run id.
var ErrBadCursor = storage.ErrBadCursor

// ErrUnavailable is wrapped by the errors of an operation that storage
// could not serve (locked by another program, disk full, read-only):
// nothing was changed, and retrying later may succeed.
var ErrUnavailable = storage.ErrUnavailable

// FailFast marks ctx as one client request's: once one of its writes
// found storage unable to serve, its later writes fail at once instead of
// each waiting out the lock. Transports wrap every request's context.
func FailFast(ctx context.Context) context.Context { return storage.FailFast(ctx) }

// RunFilter selects runs for ListRuns; zero fields do not filter.
type RunFilter struct {
	Rule   string
	Kind   string
	Status string
	OK     *bool
	// Principal narrows an administrator's listing to one principal's
	// runs; anyone else sees only their own whatever it says.
	Principal string
	// Before is a pagination cursor: the ID of the last run of the
	// previous page; only older runs are listed. After is the other way:
	// the ID of the first run of the current page; the Limit runs newer
	// than it and closest to it are listed, still newest first. At most
	// one of them.
	Before, After string
	// Limit caps the page; <= 0 means storage.DefaultRunLimit.
	Limit int
}

// Run is one stored run as listings show it; Trace fetches its envelope.
type Run struct {
	ID        string
	Principal string
	Rule      string // the rule fired or a deploy installed; "" for other runs
	Ref       string
	Kind      string // KindDeploy, KindTest, KindFiring, KindManual
	Status    string
	OK        bool
	Started   time.Time
	Ended     time.Time
}

func runOf(r storage.Run) Run {
	return Run{ID: r.ID, Principal: r.Principal, Rule: r.Rule, Ref: r.Ref, Kind: r.Kind, Status: r.Status, OK: r.OK,
		Started: r.Started, Ended: r.Ended}
}

// ListRuns lists stored runs visible to the caller, newest first: a run
// belongs to the principal it ran under; an administrator sees every run
// (f.Principal, when set, then narrows to one principal's).
func (e *Engine) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	sf := storage.RunFilter{Rule: f.Rule, Kind: f.Kind, Status: f.Status, OK: f.OK, Principal: f.Principal,
		Before: f.Before, After: f.After, Limit: f.Limit, SkipEnvelope: true}
	if p := e.principal(ctx); !p.Admin {
		sf.Principal = p.Name
	}
	runs, err := e.store.ListRuns(ctx, sf)
	if err != nil {
		return nil, err
	}
	out := make([]Run, len(runs))
	for i, r := range runs {
		out[i] = runOf(r)
	}
	return out, nil
}

// RunInfo returns a retained run's listing record, scoped like Trace
// (another principal's run is not found).
func (e *Engine) RunInfo(ctx context.Context, id string) (Run, error) {
	run, err := e.retainedRun(ctx, e.principal(ctx), id, e.getRunMetaFor)
	if err != nil {
		return Run{}, err
	}
	return runOf(run), nil
}

// RunIDTime returns the creation time a run id encodes (to the
// millisecond).
func RunIDTime(id string) (time.Time, bool) { return storage.RunIDTime(id) }

// RuleVersion is one promoted version of a rule's program.
type RuleVersion struct {
	Ref       string
	Principal string // who deployed it first
	Risk      string
	CreatedAt time.Time
	Program   json.RawMessage // as written (the web UI's diff)
}

// RuleVersions lists the promoted versions of a rule the caller may see,
// newest first: its own, and those whose program is visible in its catalog
// (an older version may reach what the current one does not).
func (e *Engine) RuleVersions(ctx context.Context, name string) ([]RuleVersion, error) {
	if _, err := e.GetRule(ctx, name, 0); err != nil {
		return nil, err
	}
	all, err := e.store.ListPrograms(ctx, name)
	if err != nil {
		return nil, err
	}
	p, v := e.principal(ctx), (*view)(nil)
	var out []RuleVersion
	for _, pr := range all {
		if !p.OwnsRun(pr.Principal) {
			if v == nil {
				v = e.cat.View(p)
			}
			if _, ok := v.Get(pr.Ref); !ok {
				continue
			}
		}
		out = append(out, RuleVersion{Ref: pr.Ref, Principal: pr.Principal, Risk: pr.Risk, CreatedAt: pr.CreatedAt, Program: pr.Body})
	}
	return out, nil
}
