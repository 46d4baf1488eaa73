package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/wait"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// liveWorld is the World of an installed rule's firing: live state,
// commands published through MQTT, real timers. Every name is re-checked
// against the rule's principal at execution time (spec §10.3).
type liveWorld struct {
	e *Engine
	p *Principal
	f *firing // the firing this world runs, if any: CallAsync tells it of its command
	// ceiling is the risk the running rule was approved at (nil: none):
	// a device that later joins a selector's area, or an id that now
	// names something riskier, is never called past what a person saw.
	ceiling *pilotage.RiskHints
}

func (w *liveWorld) Now() time.Time { return w.e.Now().In(w.e.cfg.TimeZone) }

// Place is the server's time zone and location.
func (w *liveWorld) Place() rules.Place { return w.e.place() }

// LastChanged is when state (or event) id last changed (see changes.go).
func (w *liveWorld) LastChanged(id string) (time.Time, bool) { return w.e.lastChanged(w.p, id) }

func (w *liveWorld) State(id string) (any, bool) {
	if _, ok := w.e.cat.View(w.p).Get(id); !ok {
		return nil, false
	}
	l, ok := w.e.devs.Live(id)
	if !ok {
		return nil, false
	}
	return liveValue(l), true
}

// Available is false when id's device is known to be offline.
func (w *liveWorld) Available(id string) bool {
	if _, ok := w.e.cat.View(w.p).Get(id); !ok || w.e.devs == nil {
		return true
	}
	l, _ := w.e.devs.Live(id)
	return l.Available == nil || *l.Available
}

// liveValue is what rules read of a state: null while its device is
// offline (the last value is stale; see rules' available.go).
func liveValue(l devices.Live) any {
	if l.Available != nil && !*l.Available {
		return nil
	}
	return l.Value
}

func (w *liveWorld) Call(ctx context.Context, id string, args map[string]any) (any, error) {
	if err := w.callable(id); err != nil {
		return nil, err
	}
	topic, err := w.e.devs.CallTopic(ctx, id, args)
	if err != nil {
		return nil, callError(err)
	}
	w.wrote(id, topic)
	return publishedOutput, nil
}

// wrote notes a firing's command for the loop guard (bounds.Chains).
func (w *liveWorld) wrote(id, topic string) {
	if w.f != nil {
		w.e.sched.chains.Wrote(id, topic, w.f.depth, w.e.Now())
	}
}

// CallAsync is Call whose command need not be waited for (see
// rules.AsyncCaller): when it is pending, its end is told to the world's
// firing (firing.Acked), handed down to the connection unchanged.
func (w *liveWorld) CallAsync(ctx context.Context, id string, args map[string]any) (any, bool, error) {
	if w.f == nil {
		out, err := w.Call(ctx, id, args)
		return out, false, err
	}
	if err := w.callable(id); err != nil {
		return nil, false, err
	}
	sent, err := w.e.devs.CallAsync(ctx, id, args, w.f)
	if err != nil {
		return nil, false, callError(err)
	}
	w.wrote(id, sent.Topic())
	if !sent.Pending() {
		return publishedOutput, false, nil
	}
	w.f.sentAsync(sent)
	return publishedOutput, true, nil
}

// callable refuses an id that is no action in the principal's scope.
func (w *liveWorld) callable(id string) error {
	en, ok := w.e.cat.View(w.p).Get(id)
	if !ok || en.Kind != pilotage.KindAction {
		return fmt.Errorf("no callable action %s", quote(id))
	}
	if c := w.ceiling; c != nil && !within(en.RiskHints, *c) {
		w.e.log.Warn("refused a call above the rule's approved risk", "id", id, "risk", en.Risk, "approved", pilotage.RiskOf(*c))
		return fmt.Errorf("%s is %s risk, above the %s this rule was deployed and approved at: deploy the rule again so a person can approve it", quote(id), en.Risk, pilotage.RiskOf(*c))
	}
	return nil
}

// within reports whether an entry of hints h may run under ceiling c.
func within(h, c pilotage.RiskHints) bool {
	return (!h.Destructive || c.Destructive) && (!h.OpenWorld || c.OpenWorld) && (h.ReadOnly || !c.ReadOnly)
}

// callError is a command's error as the interpreter reads it.
func callError(err error) error {
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

func (w *liveWorld) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (w *liveWorld) Automation(id string) (*rules.Compiled, bool) {
	return w.e.automationBody(w.p, id)
}

// Wait blocks until the request's condition holds for its For duration, or
// the event occurs, or the timeout passes.
func (w *liveWorld) Wait(ctx context.Context, req *rules.WaitRequest) (bool, error) {
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	wt := wait.New(req)
	defer wt.Stop()
	unsub := w.e.devs.Subscribe(wt.Change)
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

// principalByName finds a configured principal (the owner by default).
func (e *Engine) principalByName(name string) *Principal {
	for _, p := range e.cfg.Principals {
		if p.Name == name {
			return p
		}
	}
	if name == Owner.Name || len(e.cfg.Principals) == 0 {
		return Owner
	}
	// A principal removed from the configuration keeps no authority.
	return &Principal{Name: name, Scope: Scope{Kinds: []pilotage.Kind{"none"}}}
}
