package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// Why a simulated change was refused before the simulator saw it.
var (
	errSimForbidden = errors.New("may not drive the demo devices: only the owner (admin with deploy) may")
	errNoDemo       = errors.New("the demo house is off (this serve runs with --demo=false): there are no simulated devices to drive")
)

// simulate is the one way to drive the demo simulator, for the house API
// (pilothouse sim) and the web UI's simulate control: only the owner (an
// administrator who may deploy) may make the house's sensors say what did
// not happen, and only while the demo runs. It returns the device's state
// after the change.
func (a *app) simulate(ctx context.Context, p *engine.Principal, req simRequest) (map[string]any, error) {
	if !p.Admin || !p.Deploy {
		return nil, fmt.Errorf("principal %s %w", p.Name, errSimForbidden)
	}
	if a.sim == nil {
		return nil, errNoDemo
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	switch {
	case req.Press != "" && req.Set == nil:
		err = a.sim.Trigger(ctx, req.Device, map[string]any{"action": req.Press})
	case req.Press == "":
		err = a.sim.Trigger(ctx, req.Device, req.Set)
	default:
		err = fmt.Errorf("%w: give either set or press, not both", demo.ErrInvalid)
	}
	if err != nil {
		return nil, err
	}
	a.log.Info("demo device driven by hand", "device", req.Device, "set", req.Set, "press", req.Press, "principal", p.Name)
	return a.sim.State(req.Device), nil
}

// webSim is the web UI's door to simulate: its device pages show a
// simulate control on the demo's devices.
type webSim struct{ a *app }

func (s webSim) Simulates(id string) bool {
	return s.a.sim != nil && slices.Contains(s.a.sim.Devices(), id)
}

func (s webSim) Simulate(ctx context.Context, id string, set map[string]any) error {
	p := engine.PrincipalFrom(ctx)
	if p == nil {
		p = engine.Owner
	}
	_, err := s.a.simulate(ctx, p, simRequest{Device: id, Set: set})
	if errors.Is(err, demo.ErrInvalid) {
		err = errors.New(strings.TrimPrefix(err.Error(), "demo: "))
	}
	return err
}

// simState is a demo device's state now (nil: no demo, no such device).
func (a *app) simState(dev string) map[string]any {
	if a.sim == nil {
		return nil
	}
	return a.sim.State(dev)
}

// unchangedBy lists, sorted, the properties set gives the value they
// already had in before: a state trigger fires on a change, so setting
// them fires none.
func unchangedBy(before, set map[string]any) []string {
	var out []string
	for k, v := range set {
		old, ok := before[k]
		if !ok {
			continue
		}
		a, errA := json.Marshal(old)
		b, errB := json.Marshal(v)
		if errA == nil && errB == nil && bytes.Equal(pilotage.CanonicalJSON(a), pilotage.CanonicalJSON(b)) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
