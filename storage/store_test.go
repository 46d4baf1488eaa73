package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data ?#dir") // odd characters must survive the DSN
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func prog(name, ref string) Program {
	return Program{
		Ref: ref, Name: name, Principal: "alice",
		Body:     json.RawMessage(`{"name":"` + name + `","do":[]}`),
		Plan:     json.RawMessage(`{"effects":[]}`),
		Risk:     "low",
		Baseline: json.RawMessage(`{"light.kitchen":{"kind":"device"}}`),
	}
}

func TestOpenMigratesOnceAndReopens(t *testing.T) {
	ctx := context.Background()
	s, dir := openTest(t)
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Fatalf("database file: %v", err)
	}
	if err := s.SetMeta(ctx, "retention", "P7D"); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := s.r.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d, %v; want 1", fk, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for range 2 {
		s2, err := Open(ctx, dir)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		v, err := s2.SchemaVersion(ctx)
		if err != nil || v != len(migrations) {
			t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, len(migrations))
		}
		var n int
		if err := s2.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migrations) {
			t.Fatalf("schema_migrations rows = %d, %v", n, err)
		}
		if got, err := s2.GetMeta(ctx, "retention"); err != nil || got != "P7D" {
			t.Fatalf("GetMeta after reopen = %q, %v", got, err)
		}
		s2.Close()
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	s, dir := openTest(t)
	if _, err := s.w.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(ctx, dir)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open = %v; want ErrSchemaTooNew", err)
	}
	want := fmt.Sprintf("storage: database schema is newer than this binary: database is at version %d, this binary knows up to %d", len(migrations)+1, len(migrations))
	if err.Error() != want {
		t.Fatalf("error text\n got %q\nwant %q", err, want)
	}
}

func TestMigrationFailureRollsBack(t *testing.T) {
	ctx := context.Background()
	db, err := openDB(filepath.Join(t.TempDir(), "m.db"), false, time.Duration(busyTimeoutMs)*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	list := []string{`CREATE TABLE a (x)`, `CREATE TABLE b (x); CREATE TABLE nonsense syntax (`}
	if err := migrate(ctx, db, list); err == nil || !strings.Contains(err.Error(), "migration 2") {
		t.Fatalf("migrate = %v; want migration 2 failure", err)
	}
	var v int
	db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	if v != 1 {
		t.Fatalf("version = %d; want 1", v)
	}
	if _, err := db.ExecContext(ctx, `SELECT * FROM b`); err == nil {
		t.Fatal("table b exists: failed migration was not rolled back")
	}
	if err := migrate(ctx, db, list[:1]); err != nil {
		t.Fatalf("migrate after failure: %v", err)
	}
}

func TestPrograms(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p1, p2 := prog("porch", "ref1"), prog("porch", "ref2")
	p1.CreatedAt, p2.CreatedAt = base, base.Add(time.Hour)
	p2.Body = json.RawMessage(`{"name":"porch","do":[{"call":"x"}]}`)
	for _, p := range []Program{p1, p2, prog("other", "ref3")} {
		if err := s.PutProgram(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Same ref, same content (whitespace aside): ignored.
	again := p1
	again.Body = json.RawMessage(`{ "name": "porch", "do": [] }`)
	again.Risk = "high"
	if err := s.PutProgram(ctx, again); err != nil {
		t.Fatalf("re-put identical: %v", err)
	}
	got, err := s.GetProgram(ctx, "ref1")
	if err != nil || got.Risk != "low" || !got.CreatedAt.Equal(base) || string(got.Baseline) != string(p1.Baseline) {
		t.Fatalf("GetProgram = %+v, %v", got, err)
	}
	for name, mut := range map[string]func(*Program){
		"body":     func(p *Program) { p.Body = json.RawMessage(`{"other":1}`) },
		"baseline": func(p *Program) { p.Baseline = json.RawMessage(`{}`) },
		"name":     func(p *Program) { p.Name = "elsewhere" },
	} {
		p := p1
		mut(&p)
		if err := s.PutProgram(ctx, p); !errors.Is(err, ErrConflict) {
			t.Errorf("same ref, different %s: %v; want ErrConflict", name, err)
		}
	}
	list, err := s.ListPrograms(ctx, "porch")
	if err != nil || len(list) != 2 || list[0].Ref != "ref2" || list[1].Ref != "ref1" {
		t.Fatalf("ListPrograms = %+v, %v", list, err)
	}
	if all, err := s.ListPrograms(ctx, ""); err != nil || len(all) != 3 {
		t.Fatalf("ListPrograms(\"\") = %d programs, %v; want 3", len(all), err)
	}
	if _, err := s.GetProgram(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetProgram(nope) = %v", err)
	}
	if err := s.PutProgram(ctx, Program{Ref: "r", Name: "n", Body: json.RawMessage(`{`)}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad body: %v", err)
	}
}

func TestInstallRuleReplacesAtomically(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.InstallRule(ctx, prog("porch", "ref1"), Rule{Name: "porch", Principal: "alice", Enabled: true, InstalledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRuleBroken(ctx, "porch", "device gone"); err != nil {
		t.Fatal(err)
	}
	// A failing re-deploy (program conflicts) must leave both program and rule untouched.
	bad := prog("porch", "ref1")
	bad.Body = json.RawMessage(`{"changed":true}`)
	if err := s.InstallRule(ctx, bad, Rule{Name: "porch", Enabled: false}); !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting install = %v", err)
	}
	r, err := s.GetRule(ctx, "porch")
	if err != nil || r.Ref != "ref1" || !r.Enabled || r.Broken != "device gone" {
		t.Fatalf("after failed install: %+v, %v", r, err)
	}
	// A failing rule write must roll back the program insert.
	if _, err := s.w.ExecContext(ctx, `CREATE TRIGGER no_rules BEFORE UPDATE ON rules BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	if err := s.InstallRule(ctx, prog("porch", "ref2"), Rule{Name: "porch", Enabled: true}); err == nil {
		t.Fatal("install with failing rule write succeeded")
	}
	if _, err := s.GetProgram(ctx, "ref2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("program of a rolled-back install is visible: %v", err)
	}
	s.w.ExecContext(ctx, `DROP TRIGGER no_rules`)
	t1 := t0.Add(time.Hour)
	params := json.RawMessage(`{"brightness":40,"light":"porch_light.set"}`)
	binding := json.RawMessage(`{"porch_light.set":{"kind":"action","risk":"control"}}`)
	if err := s.InstallRule(ctx, prog("porch", "ref2"), Rule{Name: "porch", Principal: "bob", Enabled: true, Params: params, Binding: binding, UpdatedAt: t1, InstalledAt: t1}); err != nil {
		t.Fatal(err)
	}
	r, err = s.GetRule(ctx, "porch")
	want := Rule{Name: "porch", Ref: "ref2", Principal: "bob", Enabled: true, Params: params, Binding: binding, InstalledAt: t0, UpdatedAt: t1}
	if err != nil || !reflect.DeepEqual(r, want) {
		t.Fatalf("after re-deploy:\n got %+v, %v\nwant %+v", r, err, want)
	}
	if err := s.InstallRule(ctx, prog("attic", "ref3"), Rule{Name: "attic"}); err != nil {
		t.Fatal(err)
	}
	rules, err := s.ListRules(ctx)
	if err != nil || len(rules) != 2 || rules[0].Name != "attic" || rules[1].Name != "porch" {
		t.Fatalf("ListRules = %+v, %v", rules, err)
	}
	if err := s.SetRuleEnabled(ctx, "attic", true); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.GetRule(ctx, "attic"); !r.Enabled {
		t.Fatal("SetRuleEnabled did not stick")
	}
	if err := s.RemoveRule(ctx, "attic"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"remove": s.RemoveRule(ctx, "attic"),
		"enable": s.SetRuleEnabled(ctx, "attic", false),
		"broken": s.SetRuleBroken(ctx, "attic", "x"),
		"get":    func() error { _, err := s.GetRule(ctx, "attic"); return err }(),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s absent rule: %v; want ErrNotFound", name, err)
		}
	}
	if _, err := s.GetProgram(ctx, "ref3"); err != nil {
		t.Fatalf("program of removed rule gone: %v", err)
	}
}

func TestIdempotency(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	first := Idem{Key: "k1", Principal: "alice", Hash: "h1", Envelope: json.RawMessage(`{"run_id":"run_a"}`), Expires: now.Add(time.Hour)}
	if err := s.PutIdem(ctx, first); err != nil {
		t.Fatal(err)
	}
	replay := first
	replay.Envelope = json.RawMessage(`{"run_id":"run_b"}`)
	if err := s.PutIdem(ctx, replay); err != nil {
		t.Fatalf("same hash: %v", err)
	}
	got, err := s.GetIdem(ctx, "k1")
	if err != nil || string(got.Envelope) != `{"run_id":"run_a"}` || !got.Expires.Equal(first.Expires) {
		t.Fatalf("GetIdem = %+v, %v; want first envelope kept", got, err)
	}
	other := first
	other.Hash = "h2"
	if err := s.PutIdem(ctx, other); !errors.Is(err, ErrConflict) {
		t.Fatalf("different hash: %v; want ErrConflict", err)
	}
	if _, err := s.GetIdem(ctx, "k2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetIdem(k2) = %v", err)
	}
	// Expired: invisible, and reusable with a new hash.
	now = now.Add(2 * time.Hour)
	if _, err := s.GetIdem(ctx, "k1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired GetIdem = %v", err)
	}
	other.Expires = now.Add(time.Hour)
	if err := s.PutIdem(ctx, other); err != nil {
		t.Fatalf("reuse expired key: %v", err)
	}
	if got, _ := s.GetIdem(ctx, "k1"); got.Hash != "h2" {
		t.Fatalf("reused key hash = %q", got.Hash)
	}
	if err := s.PutIdem(ctx, Idem{Key: "old", Hash: "h", Expires: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeExpired(ctx, now, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("PurgeExpired = %d, %v; want 1", n, err)
	}
}

func TestClaimIdem(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	claim := Idem{Key: "k", Principal: "alice", Hash: "h", Expires: time.Now().Add(time.Hour)}
	var wg sync.WaitGroup
	type result struct {
		claimed bool
		err     error
	}
	results := make(chan result, 8)
	for range 8 {
		wg.Go(func() {
			_, claimed, err := s.ClaimIdem(ctx, claim)
			results <- result{claimed, err}
		})
	}
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.claimed {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d concurrent claims won; want exactly 1", n)
	}
	got, claimed, err := s.ClaimIdem(ctx, claim)
	if err != nil || claimed || got.Envelope != nil {
		t.Fatalf("claim while in flight = %+v, %v, %v", got, claimed, err)
	}
	done := claim
	done.Envelope = json.RawMessage(`{"run_id":"run_a"}`)
	if err := s.PutIdem(ctx, done); err != nil {
		t.Fatalf("completing the claim: %v", err)
	}
	got, claimed, err = s.ClaimIdem(ctx, claim)
	if err != nil || claimed || string(got.Envelope) != `{"run_id":"run_a"}` {
		t.Fatalf("replay = %+v, %v, %v", got, claimed, err)
	}
	other := claim
	other.Hash = "h2"
	if _, _, err := s.ClaimIdem(ctx, other); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim with another hash = %v", err)
	}
}

func TestPendingAndMeta(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if err := s.InstallRule(ctx, prog("porch", "ref1"), Rule{Name: "porch", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	d := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []Pending{
		{ID: "p2", Rule: "porch", Kind: "delay", Deadline: d.Add(2 * time.Minute), State: json.RawMessage(`{"step":"/do/1"}`)},
		{ID: "p1", Rule: "porch", Kind: "for", Deadline: d.Add(time.Minute)},
		{ID: "p3", Kind: "wait", Deadline: d},
	} {
		if err := s.PutPending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutPending(ctx, Pending{ID: "px", Rule: "ghost", Kind: "for", Deadline: d}); err == nil {
		t.Fatal("pending timer for an unknown rule accepted")
	}
	all, err := s.ListPending(ctx, "")
	if err != nil || len(all) != 3 || all[0].ID != "p3" || all[2].ID != "p2" || string(all[2].State) != `{"step":"/do/1"}` || !all[1].Deadline.Equal(d.Add(time.Minute)) {
		t.Fatalf("ListPending = %+v, %v", all, err)
	}
	if err := s.DeletePending(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePending(ctx, "p1"); err != nil {
		t.Fatalf("delete absent: %v", err)
	}
	if err := s.RemoveRule(ctx, "porch"); err != nil {
		t.Fatal(err)
	}
	all, _ = s.ListPending(ctx, "")
	if len(all) != 1 || all[0].ID != "p3" {
		t.Fatalf("after RemoveRule: %+v; want only p3", all)
	}
	if _, err := s.GetMeta(ctx, "retention"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetMeta absent = %v", err)
	}
	s.SetMeta(ctx, "retention", "P1D")
	s.SetMeta(ctx, "retention", "P7D")
	if v, err := s.GetMeta(ctx, "retention"); err != nil || v != "P7D" {
		t.Fatalf("GetMeta = %q, %v", v, err)
	}
}

func TestClosedStoreErrors(t *testing.T) {
	s, _ := openTest(t)
	s.Close()
	_, err := s.GetRule(context.Background(), "x")
	if err == nil || !strings.HasPrefix(err.Error(), "storage: get rule x: ") {
		t.Fatalf("read on a closed store = %v; want a wrapped error", err)
	}
}

// TestWriterPragmas: the writer's statement journals stay in memory (a
// history chunk's spilled to a file cost a pwrite per page) and it
// checkpoints every 4,000 pages; the read pool, which sorts what users
// ask for, keeps SQLite's default temporary storage.
func TestWriterPragmas(t *testing.T) {
	s, _ := openTest(t)
	for _, tc := range []struct {
		name   string
		db     *sql.DB
		pragma string
		want   int
	}{
		{"writer", s.w, "temp_store", 2},
		{"writer", s.w, "wal_autocheckpoint", 4000},
		{"readers", s.r, "temp_store", 0},
	} {
		var got int
		if err := tc.db.QueryRowContext(context.Background(), `PRAGMA `+tc.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: %s %d, want %d", tc.name, tc.pragma, got, tc.want)
		}
	}
}

// TestInstallRefusesLookAlikeNames: in the install's transaction, a name a
// person cannot tell from an installed rule's is refused and nothing is
// stored (two look-alike deploys at once both passed the engine's check
// made before); the rule of that very name is replaced as ever.
func TestInstallRefusesLookAlikeNames(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if err := s.InstallRule(ctx, prog("owner-lock", "ref1"), Rule{Name: "owner-lock", Principal: "owner", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Owner-Lock", "0wner-lock", "owner-Iock"} {
		var alike *LookAlikeError
		if err := s.InstallRule(ctx, prog(name, "ref2"), Rule{Name: name, Principal: "guest", Enabled: true}); !errors.As(err, &alike) || alike.Installed != "owner-lock" {
			t.Errorf("%s: %v, want a LookAlikeError naming owner-lock", name, err)
		}
		if _, err := s.GetRule(ctx, name); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s was stored: %v", name, err)
		}
	}
	if err := s.InstallRule(ctx, prog("owner-lock", "ref3"), Rule{Name: "owner-lock", Principal: "owner", Enabled: true}); err != nil {
		t.Fatalf("replacing owner-lock: %v", err)
	}
}
