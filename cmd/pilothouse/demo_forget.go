package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/storage"
)

// demoLeftovers are what the demo house left in a data folder: the device
// ids its devices still hold (real devices with those names get "_2"), and
// the rules that use them.
type demoLeftovers struct {
	ids   []string
	rules []string
}

func findDemoLeftovers(ctx context.Context, st *storage.Store) (demoLeftovers, error) {
	var left demoLeftovers
	rows, err := st.LoadDeviceIDs(ctx)
	if err != nil {
		return left, err
	}
	for _, r := range rows {
		if demo.OwnsKey(r.Key) && !slices.Contains(left.ids, r.ID) {
			left.ids = append(left.ids, r.ID)
		}
	}
	rules, err := st.ListRules(ctx)
	if err != nil {
		return left, err
	}
	for _, r := range rules {
		p, err := st.GetProgram(ctx, r.Ref)
		if err != nil {
			return left, err
		}
		if usesDemoDevice(string(p.Body)) {
			left.rules = append(left.rules, r.Name)
		}
	}
	return left, nil
}

// usesDemoDevice reports whether a program's text names an entry of a demo
// device ("hall_motion.occupancy"; not "hall_motion_2.occupancy").
func usesDemoDevice(body string) bool {
	for _, name := range demo.DeviceNames() {
		for _, q := range []string{`"`, `'`} {
			if strings.Contains(body, q+name+".") {
				return true
			}
		}
	}
	return false
}

func (l demoLeftovers) empty() bool { return len(l.ids) == 0 && len(l.rules) == 0 }

// warnDemoLeftovers says, when a house runs without the demo in a data
// folder the demo used, why its devices get "_2" ids and its rules cannot
// fire, and what to do.
func warnDemoLeftovers(ctx context.Context, st *storage.Store, dir string, log *slog.Logger) {
	left, err := findDemoLeftovers(ctx, st)
	if err != nil || left.empty() {
		return
	}
	log.Warn("this data folder still holds the demo house: a real device named like a demo one gets an id with _2, and the demo's rules cannot fire; "+
		"start with a fresh --data, or stop this server and run `pilothouse demo forget --data "+dir+"` to release them",
		"demo_ids", strings.Join(left.ids, ","), "demo_rules", strings.Join(left.rules, ","))
}

func demoFlags(fs *flag.FlagSet) (data *string, keepRules *bool) {
	data = fs.String("data", os.Getenv("PILOTHOUSE_DATA"), "data folder (env PILOTHOUSE_DATA; default: the per-user data folder)")
	keepRules = fs.Bool("keep-rules", false, "release the ids only, keeping the rules (they then use the real devices of the same names)")
	return data, keepRules
}

// runDemo is pilothouse demo forget: with the house stopped, release the
// device ids the demo's devices hold and remove the rules that use them.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	data, keep := demoFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "forget" {
		return errors.New("usage: pilothouse demo forget [--data DIR] [--keep-rules]")
	}
	cfg := &Config{DataDir: *data}
	resolveDataDir(cfg)
	lock, err := lockHouse(cfg.DataDir, "demo forget", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if errors.Is(err, errHeld) {
		return heldError(cfg.DataDir, readHolder(cfg.DataDir))
	}
	if err != nil {
		return err
	}
	defer lock.release()
	st, err := storage.Open(ctx, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	return forgetDemo(ctx, st, *keep, stdout)
}

func forgetDemo(ctx context.Context, st *storage.Store, keepRules bool, stdout io.Writer) error {
	left, err := findDemoLeftovers(ctx, st)
	if err != nil {
		return err
	}
	if left.empty() {
		fmt.Fprintln(stdout, "nothing of the demo house is left in this data folder")
		return nil
	}
	if err := st.SaveDeviceIDs(ctx, nil, left.ids); err != nil {
		return err
	}
	var shown []string
	for _, id := range left.ids {
		if !strings.Contains(id, "#") { // an entity within a device: its device says it
			shown = append(shown, id)
		}
	}
	slices.Sort(shown)
	fmt.Fprintf(stdout, "released the demo's device ids: %s\n", orNone(strings.Join(shown, ", ")))
	if keepRules {
		fmt.Fprintf(stdout, "kept the rules: %s\n", orNone(strings.Join(left.rules, ", ")))
		return nil
	}
	for _, name := range left.rules {
		if err := st.RemoveRule(ctx, name); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "removed the demo's rules: %s\n", orNone(strings.Join(left.rules, ", ")))
	fmt.Fprintln(stdout, "real devices take these names at the next start")
	return nil
}
