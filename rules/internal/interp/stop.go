package interp

// The stop step.

import (
	"fmt"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

func (r *interp) stop(f *frame, s *model.RunStep, qid string, i int) *halt {
	if s.Text != "" {
		r.chargeText(len(s.Text))
		r.steps[i].Output = map[string]any{"reason": s.Text}
	}
	if s.Flags&model.StopError != 0 {
		msg := s.Text
		if msg == "" {
			msg = fmt.Sprintf("stopped with error at step %q", qid)
		}
		return r.fail(i, &halt{core.StatusFailed, msg})
	}
	r.setOutcome(i, core.StepStopped, "")
	return &halt{core.StatusStopped, s.Text}
}
