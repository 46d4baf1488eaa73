// Package pending writes the scheduler's held ("for") windows to the
// pending table, in order and off the firing's path, so they survive
// restarts.
package pending

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// pendingOp is one ordered write of the pending table.
type pendingOp struct {
	put bool
	p   storage.Pending
}

// Writer applies pending-table writes in order on its own
// goroutine, so dispatch never waits for SQLite. A full queue drops the
// write (the window then restarts from the arming after a crash) and logs.
type Writer struct {
	store *storage.Store
	log   *slog.Logger
	ch    chan pendingOp
	done  chan struct{}
	once  sync.Once
}

// New starts a writer to store.
func New(store *storage.Store, log *slog.Logger) *Writer {
	w := &Writer{store: store, log: log, ch: make(chan pendingOp, 4096), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *Writer) loop() {
	defer close(w.done)
	for op := range w.ch {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		if op.put {
			err = w.store.PutPending(ctx, op.p)
		} else {
			err = w.store.DeletePending(ctx, op.p.ID)
		}
		cancel()
		if err != nil {
			w.log.Warn("persisting a held window", "id", op.p.ID, "err", err)
		}
	}
}

// Put writes p (a window opened).
func (w *Writer) Put(p storage.Pending) { w.send(pendingOp{put: true, p: p}) }

// Delete deletes the row of window id (it closed or fired).
func (w *Writer) Delete(id string) { w.send(pendingOp{p: storage.Pending{ID: id}}) }

func (w *Writer) send(op pendingOp) {
	select {
	case w.ch <- op:
	default:
		w.log.Warn("held-window queue full: not persisted", "id", op.p.ID)
	}
}

// Close writes what is queued and stops the writer.
func (w *Writer) Close() {
	w.once.Do(func() {
		close(w.ch)
		<-w.done
	})
}
