package storage

import (
	"github.com/pilothouse/pilothouse/internal/testutil"

	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lockFile takes the database's write lock from another connection (as a
// backup tool would) until the test ends.
func lockFile(t *testing.T, dir string) {
	t.Helper()
	testutil.LockSQLite(t, filepath.Join(dir, FileName))
}

// TestFailFastRequestWrites: a deploy by program_ref under a locked
// database took 33.9 s, each of its writes waiting the busy timeout in
// turn. Under FailFast, the first write of a request that meets the lock
// fails after the busy timeout and every later one at once, saying why.
func TestFailFastRequestWrites(t *testing.T) {
	const busy = 300 * time.Millisecond
	dir := t.TempDir()
	s, err := OpenWith(context.Background(), dir, Options{BusyTimeout: busy})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lockFile(t, dir)
	ctx := FailFast(context.Background())
	t0 := time.Now()
	err = s.InstallRule(ctx, Program{Ref: "automation.x@1", Name: "x", Body: []byte(`{}`)}, Rule{Name: "x"})
	if !errors.Is(err, ErrUnavailable) || time.Since(t0) < busy {
		t.Fatalf("first write: %v after %v", err, time.Since(t0))
	}
	for name, write := range map[string]func() error{
		"runs":   func() error { return s.InsertRuns(ctx, []Run{{ID: "r1", Started: time.Now(), Status: "success"}}) },
		"enable": func() error { return s.SetRuleEnabled(ctx, "x", false) },
		"idem":   func() error { return s.DeleteIdem(ctx, "k") },
	} {
		t0 := time.Now()
		err := write()
		if d := time.Since(t0); !errors.Is(err, ErrUnavailable) || d > busy/2 || !strings.Contains(err.Error(), "not tried") || !strings.Contains(err.Error(), "locked") {
			t.Errorf("%s after the request's first failure: %v after %v", name, err, d)
		}
	}
	// Another request is not affected by this one's failure: it tries.
	t0 = time.Now()
	if err := s.SetRuleEnabled(FailFast(context.Background()), "x", false); !errors.Is(err, ErrUnavailable) || time.Since(t0) < busy {
		t.Errorf("another request's write: %v after %v", err, time.Since(t0))
	}
}

// TestFailFastWriterWait: a request waits for the writer connection (held
// by a background write waiting out a lock) at most the busy timeout.
func TestFailFastWriterWait(t *testing.T) {
	const busy = 200 * time.Millisecond
	s, err := OpenWith(context.Background(), t.TempDir(), Options{BusyTimeout: busy})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held, err := s.w.Conn(context.Background()) // a long write elsewhere
	if err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(5*time.Second, func() { _ = held.Close() })
	defer func() {
		if release.Stop() {
			_ = held.Close()
		}
	}()
	t0 := time.Now()
	err = s.SetRuleEnabled(FailFast(context.Background()), "x", true)
	// Bounded by the busy timeout, not by the 5 s the writer is held (a
	// busy machine adds scheduling delay on top of the 200 ms).
	if d := time.Since(t0); !errors.Is(err, ErrUnavailable) || d > 10*busy || !strings.Contains(err.Error(), "writer stayed busy") {
		t.Fatalf("a request's write behind a held writer: %v after %v", err, d)
	}
	if !s.WriteStatus().OK {
		t.Errorf("waiting for the writer is not a database failure: %+v", s.WriteStatus())
	}
}
