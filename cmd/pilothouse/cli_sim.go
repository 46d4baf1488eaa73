package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/rules"
)

// simVerbs are the sim subcommands that drive the running serve's demo
// devices (plain "sim --broker" runs the simulator itself).
var simVerbs = []string{"press", "set"}

// isSimVerb says whether args (those after "sim") are a client verb's; the
// client's connection flags (--data, --server, --token) may come before
// the verb as after it, as "sim --data X set ..." was refused with the
// simulator's usage.
func isSimVerb(args []string) bool {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cn conn
	cn.register(fs)
	if fs.Parse(args) != nil {
		return false
	}
	return fs.NArg() > 0 && slices.Contains(simVerbs, fs.Arg(0))
}

const simUsage = `usage: pilothouse sim press DEVICE ACTION          e.g. sim press bedroom_remote toggle
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
		Device    string         `json:"device"`
		State     map[string]any `json:"state"`
		At        time.Time      `json:"at"`
		Unchanged []string       `json:"unchanged"`
	}
	if err := cn.api(ctx, http.MethodPost, "sim", nil, req, &res); err != nil {
		return err
	}
	what := "pressed " + req.Press
	if a := demo.GestureAction(req.Press); req.Press != "" && a != req.Press {
		// "single" is the toggle button's press: say the value a rule sees.
		what += fmt.Sprintf(" (action %q: a rule's event trigger takes \"value\": %q)", a, a)
	}
	if req.Press == "" {
		what = "set " + strings.Join(pos[2:], " ")
	}
	fmt.Fprintf(stdout, "%s: %s\n  state now: %s\n", res.Device, what, compactAny(res.State))
	printFired(stdout, waitFirings(ctx, &cn, res.At), unchangedNote(res.Unchanged, res.State), len(res.Unchanged) > 0 && len(res.Unchanged) == len(req.Set))
	return nil
}

// unchangedNote says which properties were set to the value they had: a
// state trigger fires on a change, so those fired nothing ("" if none).
func unchangedNote(props []string, state map[string]any) string {
	if len(props) == 0 {
		return ""
	}
	was := make([]string, 0, len(props))
	for _, p := range props {
		was = append(was, fmt.Sprintf("%s was already %s", p, compactAny(state[p])))
	}
	what := "the value did"
	if len(props) > 1 {
		what = "the values did"
	}
	return rules.JoinList(was, "and") + ": " + what + " not change, and a state trigger fires only on a change (set another value first)"
}

// firingWait bounds how long sim waits for the firings a change causes:
// firing records are written in batches, about 100 ms after the command.
const firingWait = 1500 * time.Millisecond

// waitFirings polls the firings that started since at until some are
// listed and a poll adds none, or firingWait passes; the firings are
// recorded by then, so a pilothouse runs right after lists them.
func waitFirings(ctx context.Context, cn *conn, at time.Time) []apiRun {
	q := url.Values{"kind": {"firing"}, "since": {at.Format(time.RFC3339Nano)}, "limit": {"50"}}
	deadline := time.Now().Add(firingWait)
	var seen []apiRun
	for time.Now().Before(deadline) {
		var res struct {
			Runs []apiRun `json:"runs"`
		}
		if err := cn.api(ctx, http.MethodGet, "runs", q, nil, &res); err != nil {
			return seen
		}
		if len(res.Runs) > 0 && len(res.Runs) == len(seen) {
			return seen
		}
		seen = res.Runs
		select {
		case <-ctx.Done():
			return seen
		case <-time.After(150 * time.Millisecond):
		}
	}
	return seen
}

// printFired lists the firings a change caused; with none, why that can
// be: unchanged says which values did not change, and only (all of them)
// leaves no other reason.
func printFired(w io.Writer, runs []apiRun, unchanged string, only bool) {
	if len(runs) == 0 {
		why := " (no enabled rule listens to this change, a rule holds it for a \"for\" duration and fires later if it stays (pilothouse rules says when), its device says it is offline and rules do not fire on it, or its record comes later: pilothouse runs)"
		switch {
		case only:
			why = ": " + unchanged
		case unchanged != "":
			why = ": " + unchanged + "; for the rest:" + why
		}
		fmt.Fprintf(w, "  fired: nothing within %s%s\n", firingWait, why)
		return
	}
	for i := len(runs) - 1; i >= 0; i-- { // oldest first
		fmt.Fprintf(w, "  fired: %s %s (run %s)\n", runs[i].Rule, runs[i].Status, runs[i].ID)
	}
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
