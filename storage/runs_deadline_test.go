package storage

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A batch whose deadline passes after its last row fails with the
// deadline, not with its echo: database/sql rolls the transaction back
// when its context ends, and the commit then reported "transaction has
// already been committed or rolled back" (a prepared row "statement is
// closed"), which the recorder's log showed instead of the deadline.
func TestInsertRunsPastTheDeadlineSaysSo(t *testing.T) {
	s, _ := openTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	batch := []Run{mkRun("porch", "success", true, t0), mkRun("porch", "success", true, t0.Add(time.Second))}
	rows := 0
	_, err := s.WriteRuns(ctx, batch, WriteOptions{Yield: func() {
		if rows++; rows == len(batch) {
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // database/sql's rollback on ctx.Done runs meanwhile
		}
	}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteRuns past its deadline: %v, want context.DeadlineExceeded", err)
	}
	l, err := s.ListRuns(context.Background(), RunFilter{Rule: "porch", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 0 {
		t.Fatalf("%d runs stored from a batch past its deadline, want 0", len(l))
	}
}
