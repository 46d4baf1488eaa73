package storage

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openAtVersion creates dir's database as the binary that knew only the
// first version migrations made it, and returns it open (closed at the
// end of the test): what an older Pilothouse left behind.
func openAtVersion(t *testing.T, dir string, version int) *sql.DB {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	db, err := openDB(filepath.Join(dir, FileName), false, time.Duration(busyTimeoutMs)*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if err := migrate(context.Background(), db, migrations[:version]); err != nil {
		t.Fatal(err)
	}
	return db
}

// migrated closes db (made by openAtVersion) and opens the store on dir,
// which migrates it; the store closes when the test ends.
func migrated(t *testing.T, db *sql.DB, dir string) *Store {
	t.Helper()
	db.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
