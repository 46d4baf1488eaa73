package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// simVerbs are the sim subcommands that drive the running serve's demo
// devices (plain "sim --broker" runs the simulator itself).
var simVerbs = []string{"press", "set"}

func isSimVerb(args []string) bool { return len(args) > 0 && slices.Contains(simVerbs, args[0]) }

const simUsage = `usage: pilothouse sim press DEVICE ACTION          e.g. sim press bedroom_remote single
       pilothouse sim set DEVICE PROPERTY=VALUE...   e.g. sim set hall_motion occupancy=true`

// cliSim makes a demo device of the running serve act now: a button press
// or property values (JSON when they parse, else text), checked against the
// device's schema by the simulator.
func cliSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim", stderr)
	var cn conn
	cn.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	req, err := simRequestOf(pos)
	if err != nil {
		return err
	}
	var res struct {
		Device string         `json:"device"`
		State  map[string]any `json:"state"`
	}
	if err := cn.api(ctx, http.MethodPost, "sim", nil, req, &res); err != nil {
		return err
	}
	what := "pressed " + req.Press
	if req.Press == "" {
		what = "set " + strings.Join(pos[2:], " ")
	}
	fmt.Fprintf(stdout, "%s: %s\n  state now: %s\n", res.Device, what, compactAny(res.State))
	fmt.Fprintln(stdout, "  what fired: pilothouse runs --since 1m")
	return nil
}

func simRequestOf(pos []string) (simRequest, error) {
	if len(pos) < 3 {
		return simRequest{}, errors.New(simUsage)
	}
	verb, dev := pos[0], pos[1]
	if verb == "press" {
		if len(pos) != 3 {
			return simRequest{}, errors.New(simUsage)
		}
		return simRequest{Device: dev, Press: pos[2]}, nil
	}
	set := map[string]any{}
	for _, kv := range pos[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return simRequest{}, fmt.Errorf("%q: want PROPERTY=VALUE, e.g. occupancy=true\n%s", kv, simUsage)
		}
		set[k] = jsonOrString(v)
	}
	return simRequest{Device: dev, Set: set}, nil
}
