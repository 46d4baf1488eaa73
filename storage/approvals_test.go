package storage

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestApprovalLifecycle: a request is decided once, used once, and counts
// for nothing after it expires.
func TestApprovalLifecycle(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	mk := func(id, key string) Approval {
		return Approval{ID: id, Key: key, Principal: "guest", Rule: "lock", Ref: "automation.lock@1", Program: []byte(`{"name":"lock"}`),
			Params: []byte(`{}`), Plan: []byte(`{"steps":[]}`), Risk: "security", CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute)}
	}
	for _, a := range []Approval{mk("ap_1", "k1"), mk("ap_2", "k2"), mk("ap_3", "k3")} {
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.CountOpenApprovals(ctx, "guest", t0); err != nil || n != 3 {
		t.Fatalf("open = %d, %v", n, err)
	}
	steps := []struct {
		what string
		do   func() error
		want error
	}{
		{"use before approval", func() error { return s.UseApproval(ctx, "ap_1", "run_1", t0) }, ErrConflict},
		{"approve", func() error { return s.DecideApproval(ctx, "ap_1", true, "owner", "web", t0.Add(time.Minute)) }, nil},
		{"decide twice", func() error { return s.DecideApproval(ctx, "ap_1", false, "owner", "web", t0.Add(time.Minute)) }, ErrConflict},
		{"use", func() error { return s.UseApproval(ctx, "ap_1", "run_1", t0.Add(2*time.Minute)) }, nil},
		{"use twice", func() error { return s.UseApproval(ctx, "ap_1", "run_2", t0.Add(2*time.Minute)) }, ErrConflict},
		{"decline", func() error { return s.DecideApproval(ctx, "ap_2", false, "owner", "cli", t0.Add(time.Minute)) }, nil},
		{"use declined", func() error { return s.UseApproval(ctx, "ap_2", "run_3", t0.Add(2*time.Minute)) }, ErrConflict},
		{"approve expired", func() error { return s.DecideApproval(ctx, "ap_3", true, "owner", "web", t0.Add(15*time.Minute)) }, ErrConflict},
		{"unknown", func() error { return s.DecideApproval(ctx, "ap_9", true, "owner", "web", t0) }, ErrNotFound},
	}
	for _, st := range steps {
		if err := st.do(); !errors.Is(err, st.want) && !(st.want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", st.what, err, st.want)
		}
	}
	a, err := s.GetApproval(ctx, "ap_1")
	if err != nil || a.Status != ApprovalUsed || a.DecidedBy != "owner" || a.Channel != "web" || a.UsedRun != "run_1" || !a.DecidedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("ap_1 = %+v, %v", a, err)
	}
	if u, err := s.LastUsedApproval(ctx, "lock"); err != nil || u.ID != "ap_1" {
		t.Errorf("last used = %+v, %v", u, err)
	}
	if l, err := s.LatestApproval(ctx, "k3"); err != nil || !l.Expired(t0.Add(15*time.Minute)) {
		t.Errorf("latest k3 = %+v, %v", l, err)
	}
	open, err := s.ListApprovals(ctx, true, t0.Add(3*time.Minute), 10)
	if err != nil || len(open) != 1 || open[0].ID != "ap_3" {
		t.Errorf("open list = %+v, %v", open, err)
	}
}
