package storage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestWriteStatusFollowsARealLock: another connection holding SQLite's
// write lock makes writes fail as ErrUnavailable and flips WriteStatus;
// refused records do not; once the lock goes, the store's own probe brings
// the status back without any other write.
func TestWriteStatusFollowsARealLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenWith(ctx, dir, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetMeta(ctx, "k", "v"); err != nil || !s.WriteStatus().OK {
		t.Fatalf("healthy store: %v %+v", err, s.WriteStatus())
	}
	if err := s.SetRuleEnabled(ctx, "missing", true); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnavailable) || !s.WriteStatus().OK {
		t.Fatalf("a missing rule is not a storage failure: %v %+v", err, s.WriteStatus())
	}

	release := testutil.LockSQLite(t, filepath.Join(dir, FileName))
	for name, write := range map[string]func() error{
		"meta":    func() error { return s.SetMeta(ctx, "k", "w") },
		"program": func() error { return s.PutProgram(ctx, Program{Ref: "automation.x@1", Name: "x", Body: []byte(`{}`)}) },
		"runs":    func() error { return s.InsertRuns(ctx, []Run{{ID: "r1", Started: time.Now(), Status: "success"}}) },
	} {
		if err := write(); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s with the database locked: %v, want ErrUnavailable", name, err)
		}
	}
	st := s.WriteStatus()
	if st.OK || !strings.Contains(st.Error, "locked") || st.Since.IsZero() || st.Failures != 3 {
		t.Fatalf("status with the database locked: %+v", st)
	}
	if _, err := s.GetMeta(ctx, "k"); err != nil {
		t.Fatalf("reads go on under WAL: %v", err)
	}

	release()
	if !testutil.Within(4*probeEvery, func() bool { return s.WriteStatus().OK }) {
		t.Fatalf("the status never recovered: %+v", s.WriteStatus())
	}
	if st := s.WriteStatus(); st.Error != "" || st.Failures != 3 {
		t.Fatalf("recovered status: %+v", st)
	}
}
