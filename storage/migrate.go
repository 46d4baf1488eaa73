package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations is the schema history: migrations[i] brings the database to
// version i+1. Append only; never edit a released entry.
var migrations = []string{
	// 1: programs, rules, runs, idempotency keys, pending timers, meta.
	`
CREATE TABLE programs (
	ref        TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	principal  TEXT NOT NULL,
	body       TEXT NOT NULL,
	plan       TEXT,
	params     TEXT,
	risk_hints TEXT,
	risk       TEXT NOT NULL,
	baseline   TEXT,
	created_at INTEGER NOT NULL
);
CREATE INDEX programs_by_name ON programs (name, created_at);

CREATE TABLE rules (
	name         TEXT PRIMARY KEY,
	ref          TEXT NOT NULL REFERENCES programs (ref),
	principal    TEXT NOT NULL,
	enabled      INTEGER NOT NULL,
	broken       TEXT NOT NULL DEFAULT '',
	installed_at INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
);

CREATE TABLE runs (
	id        TEXT PRIMARY KEY,
	principal TEXT NOT NULL,
	rule      TEXT NOT NULL,
	ref       TEXT NOT NULL,
	kind      TEXT NOT NULL,
	status    TEXT NOT NULL,
	ok        INTEGER NOT NULL,
	started   INTEGER NOT NULL,
	ended     INTEGER,
	level     TEXT NOT NULL,
	expires   INTEGER,
	envelope  TEXT -- last: the big column, so reading the others never walks past it
);
CREATE INDEX runs_by_start     ON runs (started, id);
CREATE INDEX runs_by_rule      ON runs (rule, started, id);
CREATE INDEX runs_by_principal ON runs (principal, started, id);
CREATE INDEX runs_by_status    ON runs (status, started, id);
CREATE INDEX runs_by_expiry    ON runs (expires) WHERE expires IS NOT NULL;

CREATE TABLE idempotency (
	key       TEXT PRIMARY KEY,
	principal TEXT NOT NULL,
	hash      TEXT NOT NULL,
	envelope  TEXT,
	expires   INTEGER
);
CREATE INDEX idempotency_by_expiry ON idempotency (expires) WHERE expires IS NOT NULL;

CREATE TABLE pending (
	id       TEXT PRIMARY KEY,
	rule     TEXT REFERENCES rules (name) ON DELETE CASCADE,
	kind     TEXT NOT NULL,
	deadline INTEGER NOT NULL,
	state    TEXT
);
CREATE INDEX pending_by_rule ON pending (rule);

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
`,
	// 2: the params an installed rule was deployed with.
	`ALTER TABLE rules ADD COLUMN params TEXT;`,
	// 3: runs_by_rule covers the history trim (kind, status), which then
	// reads no run rows, only the index.
	`DROP INDEX runs_by_rule;
CREATE INDEX runs_by_rule ON runs (rule, started, id, kind, status);`,
	// 4: runs_by_status leaves out successes, nearly every firing: one
	// B-tree fewer to insert into and delete from per firing. Listing
	// successes walks runs_by_start (they are most runs anyway).
	`DROP INDEX runs_by_status;
CREATE INDEX runs_by_status ON runs (status, started, id) WHERE status <> 'success';`,
	// 5: no expiry index on runs: PurgeExpired walks runs_by_start up to
	// now minus the retention (a run expires at least that long after it
	// started). One B-tree fewer per firing.
	`DROP INDEX runs_by_expiry;`,
	// 6: the device id registry: which device (stable key) owns which id.
	`CREATE TABLE device_ids (
	key         TEXT PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	base        TEXT NOT NULL,
	assigned_at INTEGER NOT NULL
);`,
	// 7: state history (see history.go): entity ids, every change in
	// insertion order (the rowid bounds the table's size), and 5-minute
	// summaries of numeric states for long ranges.
	`CREATE TABLE history_entities (
	id     INTEGER PRIMARY KEY,
	entity TEXT NOT NULL UNIQUE
);
CREATE TABLE history (
	entity INTEGER NOT NULL,
	t      INTEGER NOT NULL,
	num    REAL,
	val    TEXT
);
CREATE INDEX history_by_entity ON history (entity, t);
CREATE TABLE history_5m (
	entity INTEGER NOT NULL,
	bucket INTEGER NOT NULL,
	n      INTEGER NOT NULL,
	lo     REAL NOT NULL,
	hi     REAL NOT NULL,
	total  REAL NOT NULL,
	PRIMARY KEY (entity, bucket)
) WITHOUT ROWID;`,
	// 8: device ids by id: a key holds one id (left_at 0) and may keep
	// others reserved (left_at: when it left them), so that an id a rule
	// names is not taken by another device at once.
	`CREATE TABLE device_ids_v8 (
	id          TEXT PRIMARY KEY,
	key         TEXT NOT NULL,
	base        TEXT NOT NULL,
	assigned_at INTEGER NOT NULL,
	left_at     INTEGER NOT NULL DEFAULT 0
);
INSERT INTO device_ids_v8 (id, key, base, assigned_at) SELECT id, key, base, assigned_at FROM device_ids;
DROP TABLE device_ids;
ALTER TABLE device_ids_v8 RENAME TO device_ids;
CREATE UNIQUE INDEX device_ids_held ON device_ids (key) WHERE left_at = 0;`,
	// 9: what one principal keeps stored (StoredUsage): its test runs
	// (a partial index: firings, nearly every run, pay nothing) and its
	// idempotency records.
	`CREATE INDEX IF NOT EXISTS runs_tests_by_principal ON runs (principal, expires) WHERE kind = 'test';
CREATE INDEX IF NOT EXISTS idempotency_by_principal ON idempotency (principal);`,
	// 10: the entries a rule with catalog-reference params was bound to
	// (their load-bearing fields), to bind it again at start-up.
	`ALTER TABLE rules ADD COLUMN binding TEXT;`,
	// 11: when a throttled rule's body last started, written before the
	// body runs, so a crash before the firing's record is written does
	// not forget the window.
	`CREATE TABLE throttles (
	rule    TEXT PRIMARY KEY,
	body_at INTEGER NOT NULL
) WITHOUT ROWID;`,
	// 12: each entity's latest value and since when it has held it,
	// outside the bounded history (a chatty entity pushing a quiet one's
	// last change out must not lose when it changed).
	`CREATE TABLE history_last (
	entity INTEGER PRIMARY KEY,
	t      INTEGER NOT NULL,
	num    REAL,
	val    TEXT,
	since  INTEGER NOT NULL
);`,
	// 13: running counts (history_seq.go), so that counting an entity's
	// changes in a range, in all or per value, is a few index seeks
	// rather than a walk of every row.
	`ALTER TABLE history ADD COLUMN seq INTEGER;
ALTER TABLE history ADD COLUMN vcounts BLOB;
ALTER TABLE history_last ADD COLUMN n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE history_last ADD COLUMN vcounts BLOB;
ALTER TABLE history_last ADD COLUMN vfrom INTEGER;
ALTER TABLE history_last ADD COLUMN cfrom INTEGER;
CREATE TABLE history_values (
	entity INTEGER NOT NULL,
	val    TEXT NOT NULL,
	slot   INTEGER NOT NULL,
	PRIMARY KEY (entity, val)
) WITHOUT ROWID;`,
	// 14: approvals of risky deploys (the Host risk gate, spec §7.3):
	// what was shown, bound by key, and who decided it, when and how.
	`CREATE TABLE approvals (
	id          TEXT PRIMARY KEY,
	key         TEXT NOT NULL,
	principal   TEXT NOT NULL,
	rule        TEXT NOT NULL,
	ref         TEXT NOT NULL,
	program     TEXT NOT NULL,
	params      TEXT,
	plan        TEXT,
	risk        TEXT NOT NULL,
	status      TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	decided_by  TEXT,
	decided_at  INTEGER,
	channel     TEXT,
	used_run    TEXT,
	used_at     INTEGER
);
CREATE INDEX approvals_by_key ON approvals (key, created_at);
CREATE INDEX approvals_by_rule ON approvals (rule, used_at);
CREATE INDEX approvals_by_status ON approvals (status, created_at);`,
	// 15: the logbook (logbook.go): one time-ordered stream of what
	// happened in the house, bounded by age and by row count (rowid).
	`CREATE TABLE logbook (
	id        INTEGER PRIMARY KEY,
	t         INTEGER NOT NULL,
	kind      TEXT NOT NULL,
	device    TEXT NOT NULL DEFAULT '',
	area      TEXT NOT NULL DEFAULT '',
	rule      TEXT NOT NULL DEFAULT '',
	principal TEXT NOT NULL DEFAULT '',
	ref       TEXT NOT NULL DEFAULT '',
	run       TEXT NOT NULL DEFAULT '',
	status    TEXT NOT NULL DEFAULT '',
	text      TEXT NOT NULL
);
CREATE INDEX logbook_by_t ON logbook (t, id);
CREATE INDEX logbook_by_device ON logbook (device, t, id) WHERE device <> '';
CREATE INDEX logbook_by_rule ON logbook (rule, t, id) WHERE rule <> '';
CREATE INDEX logbook_by_kind ON logbook (kind, t, id);`,
	// 16: the household's helpers (helpers.go): each one's definition
	// (JSON), where it was made (config or api) and its value (JSON).
	`CREATE TABLE helpers (
	id         TEXT PRIMARY KEY,
	def        TEXT NOT NULL,
	source     TEXT NOT NULL,
	value      TEXT NOT NULL,
	updated_at INTEGER NOT NULL
);`,
	// 17: the history's bound by bytes (history_bytes.go): each row's
	// place in the running sum of the rows' bytes (histRowBytes is 40).
	`ALTER TABLE history ADD COLUMN bpos INTEGER;
UPDATE history SET bpos = p.b FROM (SELECT rowid AS r,
	sum(40 + coalesce(length(CAST(val AS BLOB)), 8)) OVER (ORDER BY rowid) - (40 + coalesce(length(CAST(val AS BLOB)), 8)) AS b
	FROM history) AS p WHERE history.rowid = p.r;`,
	// 18: the logbook's shares of its rows (logbook_shares.go shareOf): 0 the
	// house's own lines, 1 what the bus reports (events, availability), 2
	// the rules' firings and changes; seq numbers each share's rows, so each is
	// trimmed to its own window without counting. The one rewrite of every
	// row also cuts a text over 512 bytes (a bus's payload) to 128
	// characters.
	`ALTER TABLE logbook ADD COLUMN share INTEGER NOT NULL DEFAULT 0;
ALTER TABLE logbook ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE logbook SET share = p.s, seq = p.n, text = CASE WHEN length(CAST(logbook.text AS BLOB)) <= 512 THEN logbook.text
	ELSE substr(logbook.text, 1, 128) || '… (' || length(CAST(logbook.text AS BLOB)) || ' bytes)' END
FROM (SELECT id AS r, s, row_number() OVER (PARTITION BY s ORDER BY id) AS n FROM
	(SELECT id, CASE WHEN kind IN ('event', 'availability') THEN 1 WHEN kind IN ('firing', 'rule') THEN 2 ELSE 0 END AS s FROM logbook)) AS p
WHERE logbook.id = p.r;
CREATE INDEX logbook_by_share ON logbook (share, seq);`,
	// 19: the rules' share of the logbook split by principal (logbook_shares.go
	// LogShares): part names the principal whose part a rule's line is in,
	// and seq numbers each part's rows.
	`ALTER TABLE logbook ADD COLUMN part TEXT NOT NULL DEFAULT '';
UPDATE logbook SET part = p.who, seq = p.n
FROM (SELECT id AS r, principal AS who, row_number() OVER (PARTITION BY principal ORDER BY id) AS n FROM logbook WHERE share = 2) AS p
WHERE logbook.id = p.r;
DROP INDEX logbook_by_share;
CREATE INDEX logbook_by_part ON logbook (share, part, seq);`,
	// 20: rule changes in a share of their own (logbook_shares.go, 3),
	// which firings cannot evict; both shares' parts numbered again.
	`UPDATE logbook SET share = 3 WHERE share = 2 AND kind = 'rule';
UPDATE logbook SET seq = p.n
FROM (SELECT id AS r, row_number() OVER (PARTITION BY share, part ORDER BY id) AS n FROM logbook WHERE share IN (2, 3)) AS p
WHERE logbook.id = p.r;`,
}

// migrate brings db up to len(list), one transaction per migration. A
// database at a higher version than the binary knows is refused untouched.
func migrate(ctx context.Context, db *sql.DB, list []string) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("storage: create schema_migrations: %w", err)
	}
	for {
		done, err := migrateOne(ctx, db, list)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next pending migration, if any. The version is
// read inside the (immediate) transaction so two processes opening the
// same file cannot apply a step twice.
func migrateOne(ctx context.Context, db *sql.DB, list []string) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("storage: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return false, fmt.Errorf("storage: migrate: read version: %w", err)
	}
	switch {
	case v > len(list):
		return false, fmt.Errorf("%w: database is at version %d, this binary knows up to %d", ErrSchemaTooNew, v, len(list))
	case v == len(list):
		return true, tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, list[v]); err != nil {
		return false, fmt.Errorf("storage: migration %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		v+1, time.Now().UnixNano()); err != nil {
		return false, fmt.Errorf("storage: migration %d: record version: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("storage: migration %d: commit: %w", v+1, err)
	}
	return false, nil
}

// SchemaVersion reports the version the database is at.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("storage: read schema version: %w", err)
	}
	return v, nil
}
