package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/internal/shown"
)

// Program is a promoted program (spec §5.4): an immutable body under a
// content-addressed Ref, with the catalog baseline recorded at promotion.
type Program struct {
	Ref       string
	Name      string
	Principal string
	Body      json.RawMessage
	Plan      json.RawMessage
	Params    json.RawMessage
	RiskHints json.RawMessage
	Risk      string
	Baseline  json.RawMessage
	CreatedAt time.Time
}

// Rule is an installed rule: a name bound to one promoted program.
type Rule struct {
	Name      string
	Ref       string
	Principal string
	Enabled   bool
	Broken    string          // reason; "" means the rule is fine
	Params    json.RawMessage // the input bound to the program's params at install
	// Binding is the baseline of the entries the rule was bound to at
	// install ({id: load-bearing fields}), when its program has
	// catalog-reference params (nil otherwise): the bound body is
	// validated against it again at start-up.
	Binding json.RawMessage
	// Damaged says why the stored row could not be read whole (a column
	// that is not valid JSON, which then reads as empty); "" when sound.
	Damaged     string
	InstalledAt time.Time
	UpdatedAt   time.Time
}

const programCols = `ref, name, principal, body, plan, params, risk_hints, risk, baseline, created_at`

// PutProgram stores p unless its Ref is already stored. Refs are immutable:
// if the stored program under Ref has a different name, body or baseline,
// PutProgram fails with ErrConflict rather than silently keeping the old
// baseline (a re-promotion after drift must mint a new ref, spec §5.4).
func (s *Store) PutProgram(ctx context.Context, p Program) error {
	return s.inTx(ctx, "put program "+p.Ref, func(tx *sql.Tx) error {
		return putProgram(ctx, tx, p, s.now())
	})
}

func checkProgram(p Program) error {
	if p.Ref == "" || p.Name == "" {
		return fmt.Errorf("%w: program needs a ref and a name", ErrInvalid)
	}
	if len(p.Body) == 0 {
		return fmt.Errorf("%w: program %s has no body", ErrInvalid, p.Ref)
	}
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"body", p.Body}, {"plan", p.Plan}, {"params", p.Params}, {"risk_hints", p.RiskHints}, {"baseline", p.Baseline}} {
		if err := checkJSON("program "+p.Ref+" "+f.name, f.raw); err != nil {
			return err
		}
	}
	return nil
}

func putProgram(ctx context.Context, tx *sql.Tx, p Program, now time.Time) error {
	if err := checkProgram(p); err != nil {
		return err
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO programs (`+programCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING`,
		p.Ref, p.Name, p.Principal, jsonArg(p.Body), jsonArg(p.Plan), jsonArg(p.Params),
		jsonArg(p.RiskHints), p.Risk, jsonArg(p.Baseline), timeArg(p.CreatedAt))
	if err != nil {
		return fmt.Errorf("storage: put program %s: %w", p.Ref, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		if err != nil {
			return fmt.Errorf("storage: put program %s: %w", p.Ref, err)
		}
		return nil
	}
	old, err := scanProgram(tx.QueryRowContext(ctx, `SELECT `+programCols+` FROM programs WHERE ref = ?`, p.Ref))
	if err != nil {
		return fmt.Errorf("storage: put program %s: read stored: %w", p.Ref, err)
	}
	switch {
	case old.Name != p.Name:
		return fmt.Errorf("%w: program %s is stored under name %q, not %q", ErrConflict, p.Ref, old.Name, p.Name)
	case !sameJSON(old.Body, p.Body):
		return fmt.Errorf("%w: program %s is stored with a different body", ErrConflict, p.Ref)
	case !sameJSON(old.Baseline, p.Baseline):
		return fmt.Errorf("%w: program %s is stored with a different baseline", ErrConflict, p.Ref)
	}
	return nil
}

// sameJSON compares two JSON texts ignoring insignificant whitespace.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

type scanner interface{ Scan(dest ...any) error }

func scanProgram(row scanner) (Program, error) {
	var p Program
	var body, plan, params, hints, baseline []byte
	var created sql.NullInt64
	if err := row.Scan(&p.Ref, &p.Name, &p.Principal, &body, &plan, &params, &hints, &p.Risk, &baseline, &created); err != nil {
		return Program{}, err
	}
	p.Body, p.Plan, p.Params, p.RiskHints, p.Baseline = jsonVal(body), jsonVal(plan), jsonVal(params), jsonVal(hints), jsonVal(baseline)
	p.CreatedAt = timeVal(created)
	return p, nil
}

// GetProgram returns the program stored under ref, or ErrNotFound.
func (s *Store) GetProgram(ctx context.Context, ref string) (Program, error) {
	v, err := s.getProgram(ctx, ref)
	return v, s.fault(ctx, err)
}

func (s *Store) getProgram(ctx context.Context, ref string) (Program, error) {
	p, err := scanProgram(s.r.QueryRowContext(ctx, `SELECT `+programCols+` FROM programs WHERE ref = ?`, ref))
	if errors.Is(err, sql.ErrNoRows) {
		return Program{}, fmt.Errorf("storage: get program %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Program{}, fmt.Errorf("storage: get program %s: %w", ref, err)
	}
	return p, nil
}

// ListPrograms returns every stored version of the rule called name,
// newest first; name "" lists every stored program (for loading at start).
func (s *Store) ListPrograms(ctx context.Context, name string) ([]Program, error) {
	v, err := s.listPrograms(ctx, name)
	return v, s.fault(ctx, err)
}

func (s *Store) listPrograms(ctx context.Context, name string) ([]Program, error) {
	q, args := `SELECT `+programCols+` FROM programs`, []any{}
	if name != "" {
		q, args = q+` WHERE name = ?`, append(args, name)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY created_at DESC, rowid DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: list programs %s: %w", name, err)
	}
	defer rows.Close()
	var out []Program
	for rows.Next() {
		p, err := scanProgram(rows)
		if err != nil {
			return nil, fmt.Errorf("storage: list programs %s: %w", name, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: list programs %s: %w", name, err)
	}
	return out, nil
}

// InstallRule stores p and binds r.Name to it in one transaction; installing
// over an existing name replaces the binding atomically (keeping the first
// InstalledAt). r.Ref is taken from p.Ref. Zero timestamps default to now.
func (s *Store) InstallRule(ctx context.Context, p Program, r Rule) error {
	return s.InstallRuleCapped(ctx, p, r, 0)
}

// RuleCapError is InstallRuleCapped's refusal: r.Principal keeps Rules
// other rules, and the cap is Max.
type RuleCapError struct {
	Principal  string
	Rules, Max int
}

func (e *RuleCapError) Error() string {
	return fmt.Sprintf("storage: principal %s keeps %d rules, the most it may", e.Principal, e.Rules)
}

// InstallRuleCapped is InstallRule refusing (*RuleCapError, nothing
// stored) a rule that would make r.Principal keep more than maxRules rules
// (0: no cap); counted in the install's transaction, so concurrent deploys
// cannot pass the cap together.
func (s *Store) InstallRuleCapped(ctx context.Context, p Program, r Rule, maxRules int) error {
	if r.Name == "" {
		return fmt.Errorf("%w: rule needs a name", ErrInvalid)
	}
	if r.Ref != "" && r.Ref != p.Ref {
		return fmt.Errorf("%w: rule %s names ref %s but the program is %s", ErrInvalid, r.Name, r.Ref, p.Ref)
	}
	now := s.now()
	if r.InstalledAt.IsZero() {
		r.InstalledAt = now
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.InstalledAt
	}
	return s.inTx(ctx, "install rule "+r.Name, func(tx *sql.Tx) error {
		if err := checkRuleCap(ctx, tx, r, maxRules); err != nil {
			return err
		}
		if err := checkLookAlike(ctx, tx, r.Name); err != nil {
			return err
		}
		if err := putProgram(ctx, tx, p, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO rules (name, ref, principal, enabled, broken, installed_at, updated_at, params, binding)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET ref = excluded.ref, principal = excluded.principal,
				enabled = excluded.enabled, broken = excluded.broken, updated_at = excluded.updated_at, params = excluded.params,
				binding = excluded.binding`,
			r.Name, p.Ref, r.Principal, boolArg(r.Enabled), r.Broken, timeArg(r.InstalledAt), timeArg(r.UpdatedAt), jsonArg(r.Params), jsonArg(r.Binding))
		if err != nil {
			return fmt.Errorf("storage: install rule %s: %w", r.Name, err)
		}
		return nil
	})
}

// checkRuleCap refuses r when its principal keeps maxRules other rules.
func checkRuleCap(ctx context.Context, tx *sql.Tx, r Rule, maxRules int) error {
	if maxRules <= 0 {
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM rules WHERE principal = ? AND name <> ?`, r.Principal, r.Name).Scan(&n); err != nil {
		return fmt.Errorf("storage: install rule %s: count rules: %w", r.Name, err)
	}
	if n >= maxRules {
		return &RuleCapError{Principal: r.Principal, Rules: n, Max: maxRules}
	}
	return nil
}

// LookAlikeError is InstallRule's refusal of a name a person cannot tell
// from Installed's (shown.Fold): nothing was stored.
type LookAlikeError struct{ Name, Installed string }

func (e *LookAlikeError) Error() string {
	return fmt.Sprintf("storage: rule %q looks the same to a person as the installed %q", e.Name, e.Installed)
}

// checkLookAlike refuses name beside a rule whose name folds to the same
// (shown.Fold), unless it replaces a rule of this very name; in the
// install's transaction, so two look-alike deploys at once cannot both
// pass the engine's check made before it (LookAlikeOf).
func checkLookAlike(ctx context.Context, tx *sql.Tx, name string) error {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM rules`)
	if err != nil {
		return fmt.Errorf("storage: install rule %s: read names: %w", name, err)
	}
	alike, err := lookAlikeIn(rows, name)
	if err != nil {
		return fmt.Errorf("storage: install rule %s: read names: %w", name, err)
	}
	if alike != "" {
		return &LookAlikeError{Name: name, Installed: alike}
	}
	return nil
}

// LookAlikeOf is the installed rule whose name a person cannot tell from
// name (shown.Fold): "" when there is none, or when a rule of that very
// name is installed (replacing it adds no look-alike).
func (s *Store) LookAlikeOf(ctx context.Context, name string) (string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM rules ORDER BY name`)
	if err != nil {
		return "", s.fault(ctx, fmt.Errorf("storage: look-alikes of %s: %w", name, err))
	}
	alike, err := lookAlikeIn(rows, name)
	return alike, s.fault(ctx, err)
}

// lookAlikeIn reads rows of rule names and closes them: the first whose
// name folds to name's, or "" when name itself is among them.
func lookAlikeIn(rows *sql.Rows, name string) (string, error) {
	defer rows.Close()
	want, alike := shown.Fold(name), ""
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return "", err
		}
		if n == name {
			return "", nil
		}
		if alike == "" && shown.Fold(n) == want {
			alike = n
		}
	}
	return alike, rows.Err()
}

// soundJSON is a rule's JSON column b, or nil with r.Damaged saying why
// when it is not valid JSON: one damaged row must not break a listing.
func soundJSON(r *Rule, col string, b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if !json.Valid(b) || !isObject(b) {
		if r.Damaged == "" {
			r.Damaged = "its stored " + col + " column is not a valid JSON object (the database row is damaged): deploy the rule again"
		}
		return nil
	}
	return b
}

// isObject reports whether the valid JSON text b is an object or null.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && (b[0] == '{' || string(b) == "null")
}

const ruleCols = `name, ref, principal, enabled, broken, installed_at, updated_at, params, binding`

func scanRule(row scanner) (Rule, error) {
	var r Rule
	var installed, updated sql.NullInt64
	var params, binding []byte
	if err := row.Scan(&r.Name, &r.Ref, &r.Principal, &r.Enabled, &r.Broken, &installed, &updated, &params, &binding); err != nil {
		return Rule{}, err
	}
	r.InstalledAt, r.UpdatedAt = timeVal(installed), timeVal(updated)
	r.Params, r.Binding = soundJSON(&r, "params", params), soundJSON(&r, "binding", binding)
	return r, nil
}

// GetRule returns the installed rule called name, or ErrNotFound.
func (s *Store) GetRule(ctx context.Context, name string) (Rule, error) {
	v, err := s.getRule(ctx, name)
	return v, s.fault(ctx, err)
}

func (s *Store) getRule(ctx context.Context, name string) (Rule, error) {
	r, err := scanRule(s.r.QueryRowContext(ctx, `SELECT `+ruleCols+` FROM rules WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Rule{}, fmt.Errorf("storage: get rule %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Rule{}, fmt.Errorf("storage: get rule %s: %w", name, err)
	}
	return r, nil
}

// ListRules returns every installed rule, sorted by name.
func (s *Store) ListRules(ctx context.Context) ([]Rule, error) {
	v, err := s.listRules(ctx)
	return v, s.fault(ctx, err)
}

func (s *Store) listRules(ctx context.Context) ([]Rule, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+ruleCols+` FROM rules ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("storage: list rules: %w", err)
	}
	defer rows.Close()
	var out []Rule
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, fmt.Errorf("storage: list rules: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: list rules: %w", err)
	}
	return out, nil
}

// SetRuleEnabled enables or disables the rule called name.
func (s *Store) SetRuleEnabled(ctx context.Context, name string, enabled bool) error {
	return s.execOne(ctx, "set rule "+name+" enabled",
		`UPDATE rules SET enabled = ?, updated_at = ? WHERE name = ?`, boolArg(enabled), s.now().UnixNano(), name)
}

// SetRuleBroken records why the rule called name is broken; "" clears it.
func (s *Store) SetRuleBroken(ctx context.Context, name, reason string) error {
	return s.execOne(ctx, "set rule "+name+" broken",
		`UPDATE rules SET broken = ?, updated_at = ? WHERE name = ?`, reason, s.now().UnixNano(), name)
}

// RemoveRule uninstalls the rule called name and drops its pending timers.
// Its programs and runs stay. It returns ErrNotFound if no such rule exists.
func (s *Store) RemoveRule(ctx context.Context, name string) error {
	return s.execOne(ctx, "remove rule "+name, `DELETE FROM rules WHERE name = ?`, name)
}

// execOne runs one write statement that must touch exactly one row.
func (s *Store) execOne(ctx context.Context, what, query string, args ...any) error {
	conn, err := s.writer(ctx, what)
	if err != nil {
		return s.fault(ctx, err)
	}
	defer conn.Close()
	res, err := conn.ExecContext(ctx, query, args...)
	if err != nil {
		return s.wrote(ctx, fmt.Errorf("storage: %s: %w", what, err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.wrote(ctx, fmt.Errorf("storage: %s: %w", what, err))
	}
	_ = s.wrote(ctx, nil)
	if n == 0 {
		return fmt.Errorf("storage: %s: %w", what, ErrNotFound)
	}
	return nil
}

// Unwrap makes a refusal an ErrConflict: the request, not the database,
// is at fault.
func (e *RuleCapError) Unwrap() error { return ErrConflict }
