package engine

import (
	"context"
	"errors"

	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// lookAlikeCheck refuses to install name beside a rule whose name a person
// cannot tell apart from it (shown.Fold) without being it: a guest's
// "Owner-Lock" must not pass for the owner's "owner-lock". The answer is
// the one a taken name gets, naming the rule already installed. Replacing
// a rule of this very name adds no look-alike, so it is let through.
func (e *Engine) lookAlikeCheck(ctx context.Context, runID, name string, p *Principal) *ExecuteResponse {
	alike, err := e.store.LookAlikeOf(ctx, name)
	var r storage.Rule
	if err == nil && alike != "" {
		r, err = e.store.GetRule(ctx, alike)
	}
	if err != nil {
		e.log.Warn("deploy: reading the installed rules failed; nothing was installed", "rule", name, "err", err)
		return nameRefusal(runID, name, rules.StatusPartial, "reading the installed rules failed; nothing was promoted or installed", err.Error())
	}
	if alike == "" {
		return nil
	}
	msg := "a rule named " + shown.Quote(r.Name) + " is installed, and " + shown.Quote(name) + " looks the same to a person; nothing was installed: choose another name"
	if e.visibleRule(p, r) {
		msg += ", or deploy as " + shown.Quote(r.Name) + " to replace it"
	}
	return nameRefusal(runID, name, rules.StatusDenied, msg, "name taken")
}

// lookAlikeInstalled says why storage refused name: a rule whose name a
// person cannot tell from it was installed since lookAlikeCheck.
func lookAlikeInstalled(err error, name string) (msg string, ok bool) {
	var alike *storage.LookAlikeError
	if !errors.As(err, &alike) {
		return "", false
	}
	return "a rule named " + shown.Quote(alike.Installed) + " is installed, and " + shown.Quote(name) +
		" looks the same to a person; nothing was installed: choose another name", true
}

func nameRefusal(runID, name, status, msg, stepErr string) *ExecuteResponse {
	step := pilotage.TraceStep{ID: "install", Input: map[string]any{"rule": name},
		Outcome: pilotage.Outcome{OK: false, Status: rules.StepFailed, Error: stepErr}}
	return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: status, Error: msg},
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{step}}}
}
