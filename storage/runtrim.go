package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// Trimmed counts the stored firings a write's trims deleted.
type Trimmed struct {
	Rule      int // by a rule's count or byte bound (TrimRule)
	Principal int // by a principal's byte bound
}

// trimRuleSQL's kind and status are literals: SQLite compares a bound
// status with the partial index runs_by_status's WHERE, and a statement
// whose plan depended on a bound value is prepared again after every bind
// (BenchmarkTrimRule).
const trimRuleSQL = `DELETE FROM runs WHERE rowid IN (
		SELECT rowid FROM (
			SELECT rowid, ROW_NUMBER() OVER (PARTITION BY status ORDER BY started DESC, id DESC) AS n
			FROM runs WHERE rule = ? AND kind = '` + KindFiring + `' AND status <> '` + StatusRunning + `')
		WHERE n > ?)`

// trimRuleBytesSQL is trimRuleSQL that also keeps the newest firings only
// while their bytes (of those the count keeps) fit ?3, never the newest of
// a status: the sum is monotone, so what goes is always the oldest.
const trimRuleBytesSQL = `DELETE FROM runs WHERE rowid IN (
		SELECT rowid FROM (
			SELECT rowid, n, SUM(CASE WHEN n <= ?2 THEN len ELSE 0 END)
				OVER (ORDER BY started DESC, id DESC ROWS UNBOUNDED PRECEDING) AS total
			FROM (SELECT rowid, started, id, coalesce(octet_length(envelope), 0) AS len,
				ROW_NUMBER() OVER (PARTITION BY status ORDER BY started DESC, id DESC) AS n
				FROM runs WHERE rule = ?1 AND kind = '` + KindFiring + `' AND status <> '` + StatusRunning + `'))
		WHERE n > ?2 OR (n > 1 AND total > ?3))`

// trimPrincipalSQL keeps a principal's newest finished firings while their
// bytes fit ?2, never the newest of each of its rules' statuses unless it
// is over ?3 bytes (principalKeepsNewest): those alone could otherwise
// pass the bound many times (rules × statuses × MaxRunBytes).
const trimPrincipalSQL = `DELETE FROM runs WHERE rowid IN (
		SELECT rowid FROM (
			SELECT rowid, coalesce(octet_length(envelope), 0) AS len,
				ROW_NUMBER() OVER (PARTITION BY rule, status ORDER BY started DESC, id DESC) AS n,
				SUM(coalesce(octet_length(envelope), 0)) OVER (ORDER BY started DESC, id DESC ROWS UNBOUNDED PRECEDING) AS total
			FROM runs WHERE principal = ?1 AND kind = '` + KindFiring + `' AND status <> '` + StatusRunning + `')
		WHERE total > ?2 AND (n > 1 OR len > ?3))`

// principalKeepsNewest is the largest newest-of-a-status firing a
// principal's byte bound never deletes: a household firing's record is a
// few KB.
const principalKeepsNewest = 64 << 10

func (o WriteOptions) check() error {
	if len(o.Trim) > 0 && o.KeepPerStatus < 1 {
		return fmt.Errorf("%w: insert runs: KeepPerStatus must be at least 1 to trim, got %d", ErrInvalid, o.KeepPerStatus)
	}
	if len(o.TrimPrincipals) > 0 && o.MaxPrincipalBytes < 1 {
		return fmt.Errorf("%w: insert runs: MaxPrincipalBytes must be at least 1 to trim principals, got %d", ErrInvalid, o.MaxPrincipalBytes)
	}
	return nil
}

// trims are a write's prepared trim statements (nil: none of that kind).
type trims struct{ rule, principal *sql.Stmt }

func (s *Store) prepareTrims(ctx context.Context, o WriteOptions) (trims, error) {
	var t trims
	var err error
	if len(o.Trim) > 0 {
		q := trimRuleSQL
		if o.MaxRuleBytes > 0 {
			q = trimRuleBytesSQL
		}
		if t.rule, err = s.stmt(ctx, s.w, q); err != nil {
			return t, err
		}
	}
	if len(o.TrimPrincipals) > 0 {
		t.principal, err = s.stmt(ctx, s.w, trimPrincipalSQL)
	}
	return t, err
}

// run trims the rules of o.Trim, then the principals of o.TrimPrincipals,
// adding what each deleted to got.
func (t trims) run(ctx context.Context, tx *sql.Tx, o WriteOptions, got *Trimmed) error {
	ruleArgs := func(rule string) []any {
		if o.MaxRuleBytes > 0 {
			return []any{rule, o.KeepPerStatus, o.MaxRuleBytes}
		}
		return []any{rule, o.KeepPerStatus}
	}
	if err := trimEach(ctx, tx, t.rule, o, o.Trim, ruleArgs, &got.Rule); err != nil {
		return err
	}
	principalArgs := func(p string) []any { return []any{p, o.MaxPrincipalBytes, principalKeepsNewest} }
	return trimEach(ctx, tx, t.principal, o, o.TrimPrincipals, principalArgs, &got.Principal)
}

// trimEach executes st for each key, like upsertRows row by row.
func trimEach(ctx context.Context, tx *sql.Tx, st *sql.Stmt, o WriteOptions, keys []string, args func(string) []any, n *int) error {
	if st == nil {
		return nil
	}
	rowCtx := context.WithoutCancel(ctx)
	tt := tx.StmtContext(rowCtx, st)
	defer tt.Close()
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := tt.ExecContext(rowCtx, args(k)...)
		if err != nil {
			return fmt.Errorf("storage: trim %s: %w", k, err)
		}
		d, err := res.RowsAffected()
		if err == nil {
			*n += int(d)
		}
		if o.Yield != nil {
			o.Yield()
		}
	}
	return nil
}

// TrimRule keeps, for each status, the newest keepPerStatus finished
// firings of rule and deletes the older ones, so a burst of successes
// cannot evict the last failure (WriteOptions.MaxRuleBytes bounds their
// bytes too). Running firings are never trimmed, and neither are deploy or
// test runs: those came from execute and carry the retention commitment
// of spec §6.6.
func (s *Store) TrimRule(ctx context.Context, rule string, keepPerStatus int) (int, error) {
	if keepPerStatus < 1 {
		return 0, fmt.Errorf("%w: trim rule %s: keepPerStatus must be at least 1, got %d", ErrInvalid, rule, keepPerStatus)
	}
	res, err := s.w.ExecContext(ctx, trimRuleSQL, rule, keepPerStatus)
	if err != nil {
		return 0, s.wrote(ctx, fmt.Errorf("storage: trim rule %s: %w", rule, err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, s.wrote(ctx, fmt.Errorf("storage: trim rule %s: %w", rule, err))
	}
	return int(n), s.wrote(ctx, nil)
}
