package sched

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/clocktext"
	"github.com/pilothouse/pilothouse/engine/internal/wait"
	"github.com/pilothouse/pilothouse/internal/cause"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// World is the rules.World of an installed rule's firing (and of a
// manual run): live state, commands published through MQTT, real timers.
// Every name is re-checked against the rule's principal at execution time
// (spec §10.3).
type World struct {
	d *Deps
	p *access.Principal
	f *Firing // the firing this world runs, if any: CallAsync tells it of its command
	// ceiling is the risk the running rule was approved at (nil: none):
	// a device that later joins a selector's area, or an id that now
	// names something riskier, is never called past what a person saw.
	ceiling *pilotage.RiskHints
}

// NewWorld is the live world of a run by p outside any firing, held to
// ceiling when it is not nil.
func NewWorld(d *Deps, p *access.Principal, ceiling *pilotage.RiskHints) *World {
	return &World{d: d, p: p, ceiling: ceiling}
}

func (w *World) Now() time.Time { return w.d.Now().In(w.d.Zone) }

// Place is the server's time zone and location.
func (w *World) Place() rules.Place { return w.d.place() }

// LastChanged is when state (or event) id last changed (the engine's
// changes.go settles a first value after a start).
func (w *World) LastChanged(id string) (time.Time, bool) { return w.d.Host.LastChanged(w.p, id) }

func (w *World) State(id string) (any, bool) {
	if _, ok := w.d.Cat.View(w.p).Get(id); !ok {
		return nil, false
	}
	l, ok := w.d.Devs.Live(id)
	if !ok {
		return nil, false
	}
	return LiveValue(l), true
}

// Available is false when id's device is known to be offline.
func (w *World) Available(id string) bool {
	if _, ok := w.d.Cat.View(w.p).Get(id); !ok || w.d.Devs == nil {
		return true
	}
	l, _ := w.d.Devs.Live(id)
	return l.Available == nil || *l.Available
}

// LiveValue is what rules read of a state: null while its device is
// offline (the last value is stale; see rules' available.go).
func LiveValue(l devices.Live) any {
	if l.Available != nil && !*l.Available {
		return nil
	}
	return l.Value
}

func (w *World) Call(ctx context.Context, id string, args map[string]any) (any, error) {
	local, err := w.callable(id)
	if err != nil {
		return nil, err
	}
	if local {
		ctx = w.caused(ctx)
	}
	sent, err := w.d.Devs.CallSent(ctx, id, args)
	if err != nil {
		return nil, CallError(err)
	}
	w.wrote(id, sent.Topic())
	if local {
		return w.helperOutput(id), nil
	}
	return w.published(sent), nil
}

// helperOutput is a helper call's output: a helper is not on the bus, so
// nothing was published; it says what the call set, as a test run's
// "sets" does ({"sets": {"door_openings.state": 2}}), read back from the
// catalog (the helper's action ran before the call returned).
func (w *World) helperOutput(id string) any {
	dev, _, _ := strings.Cut(id, ".")
	state := dev + ".state"
	if v, ok := w.State(state); ok {
		return map[string]any{"helper": true, "sets": map[string]any{state: v}}
	}
	return map[string]any{"helper": true, "changed": true}
}

// wrote notes a firing's command for the loop guard (bounds.Chains).
func (w *World) wrote(id, topic string) {
	if w.f != nil {
		w.f.ar.s.chains.Wrote(id, topic, w.f.depth, w.d.Now())
	}
}

// CallAsync is Call whose command need not be waited for (see
// rules.AsyncCaller): when it is pending, its end is told to the world's
// firing (Firing.Acked), handed down to the connection unchanged.
func (w *World) CallAsync(ctx context.Context, id string, args map[string]any) (any, bool, error) {
	if w.f == nil {
		out, err := w.Call(ctx, id, args)
		return out, false, err
	}
	local, err := w.callable(id)
	if err != nil {
		return nil, false, err
	}
	if local {
		ctx = w.caused(ctx)
	}
	sent, err := w.d.Devs.CallAsync(ctx, id, args, w.f)
	if err != nil {
		return nil, false, CallError(err)
	}
	w.wrote(id, sent.Topic())
	if local && !sent.Pending() {
		return w.helperOutput(id), false, nil
	}
	if !sent.Pending() {
		return w.published(sent), false, nil
	}
	w.f.sentAsync(sent)
	return w.published(sent), true, nil
}

// callable refuses an id that is no action in the principal's scope;
// local is true for an action of a device Pilothouse owns (a helper).
func (w *World) callable(id string) (local bool, err error) {
	en, ok := w.d.Cat.View(w.p).Get(id)
	if !ok || en.Kind != pilotage.KindAction {
		return false, fmt.Errorf("no callable action %s", shown.Quote(id))
	}
	if c := w.ceiling; c != nil && !within(en.RiskHints, *c) {
		w.d.Log.Warn("refused a call above the rule's approved risk", "id", id, "risk", en.Risk, "approved", pilotage.RiskOf(*c))
		return false, fmt.Errorf("%s is %s risk, above the %s this rule was deployed and approved at: deploy the rule again so a person can approve it", shown.Quote(id), en.Risk, pilotage.RiskOf(*c))
	}
	return slices.Contains(en.Tags, localTag), nil
}

// localTag is the tag of the entries of the devices Pilothouse owns.
const localTag = "source:pilothouse"

// caused is ctx carrying the run's principal and rule, which a helper's
// logbook line is filed under: only helper calls pay for it, since the
// bus's devices never read it.
func (w *World) caused(ctx context.Context) context.Context {
	who, rule := "", ""
	if w.p != nil {
		who = w.p.Name
	}
	if w.f != nil {
		rule = w.f.ar.name
	}
	return cause.With(ctx, who, rule)
}

// within reports whether an entry of hints h may run under ceiling c.
func within(h, c pilotage.RiskHints) bool {
	return (!h.Destructive || c.Destructive) && (!h.OpenWorld || c.OpenWorld) && (h.ReadOnly || !c.ReadOnly)
}

// CallError is a command's error as the interpreter reads it.
func CallError(err error) error {
	if errors.Is(err, mqtt.ErrNotAcknowledged) {
		return fmt.Errorf("%w: %w", rules.ErrNotAcknowledged, err)
	}
	if errors.Is(err, mqtt.ErrNotConnected) {
		return fmt.Errorf("%w: %v", rules.ErrNotConnected, err)
	}
	return err
}

// publishedOutput is the output of every published call, shared: a step's
// output is never changed once made (the interpreter, expressions and the
// recorder only read it), and the race detector would catch a write.
var publishedOutput = map[string]any{"published": true}

// published is a published call's output: publishedOutput, with a note
// when the action's device was offline (its availability said so), as the
// command may not reach it; only that case allocates.
func (w *World) published(sent devices.Sent) any {
	dev, heard, off := sent.Offline()
	if !off {
		return publishedOutput
	}
	note := "its device " + dev + " is offline"
	if !heard.IsZero() {
		note += " (last heard from " + clocktext.Since(heard, w.d.Now(), w.d.Zone) + ")"
	}
	return map[string]any{"published": true, "note": note + ": the command was published but may not reach it"}
}

func (w *World) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Automation is the body of automation entry id in the firing's owner's
// scope. Every call step asks (an action id among them): the catalog says
// first whether id is an automation, so only one asks the engine.
func (w *World) Automation(id string) (*rules.Compiled, bool) {
	if en, ok := w.d.Cat.View(w.p).Get(id); !ok || en.Kind != pilotage.KindAutomation {
		return nil, false
	}
	if b := w.d.Host.Body(id); b != nil {
		return b.Compiled(), true
	}
	return nil, false
}

// Wait blocks until the request's condition holds for its For duration, or
// the event occurs, or the timeout passes.
func (w *World) Wait(ctx context.Context, req *rules.WaitRequest) (bool, error) {
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	wt := wait.New(req)
	defer wt.Stop()
	unsub := w.d.Devs.Subscribe(wt.Change)
	defer unsub()
	wt.Evaluate()
	select {
	case <-wt.Met():
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
