package engine

import (
	"github.com/pilothouse/pilothouse/engine/internal/bounds"
	"github.com/pilothouse/pilothouse/engine/internal/recorder"
)

// RecorderStats counts what became of the run records handed to the
// recorder since the start.
type RecorderStats = recorder.Stats

// RecorderStats reports what became of the run records so far (zero
// without storage).
func (e *Engine) RecorderStats() RecorderStats {
	if e.rec == nil {
		return RecorderStats{}
	}
	return e.rec.Stats()
}

// FiringLoad is how the firing slots are used now: firings running, and
// firings waiting for a slot with the oldest's wait.
type FiringLoad = bounds.Load

// FiringLoad reports how the firing slots are used now (/healthz).
func (e *Engine) FiringLoad() FiringLoad {
	if e.sched == nil {
		return FiringLoad{Slots: bounds.MaxRunning}
	}
	return e.sched.Work().Load()
}
