package testutil

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// LockSQLite takes SQLite's write lock on the database file from a second
// connection, as another process would (a backup tool, a second server on
// the same data folder): every write of the store then fails with
// SQLITE_BUSY once its busy timeout passes. It returns the release (also
// run when the test ends). The caller has registered the sqlite driver.
func LockSQLite(t testing.TB, file string) (release func()) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(file)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		_ = conn.Close()
		_ = db.Close()
	}
	t.Cleanup(release)
	return release
}
