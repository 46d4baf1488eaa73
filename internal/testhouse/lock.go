package testhouse

import (
	"path/filepath"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// LockDatabase takes SQLite's write lock on the store's database in the
// data folder dir, as another process would; see testutil.LockSQLite.
func LockDatabase(t testing.TB, dir string) (release func()) {
	t.Helper()
	return testutil.LockSQLite(t, filepath.Join(dir, storage.FileName))
}
