package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/storage"
)

// TestDemoForget: through the real binary, a data folder the demo used is
// detected when the house runs without the demo (the log says what to
// do); demo forget refuses while a server runs, then releases the demo's
// device ids and removes its rules, and the next start is clean.
func TestDemoForget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, env, data := buildBinary(t), binEnv(t), t.TempDir()
	ph := func(args ...string) (string, string, error) {
		return runPH(t, bin, env, append(args, "--data", data)...)
	}
	serve := func(extra ...string) ([]string, func()) {
		c := newServeCmd(bin, env, data, extra...)
		lines := startLog(t, c)
		return lines, func() { _ = c.Process.Signal(os.Interrupt); _ = c.Wait() }
	}
	_, stop := serve()
	if out, errOut, err := ph("apply", "examples/rules/hall-motion-light.json"); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := ph("demo", "forget"); err == nil || !strings.Contains(errOut, "already serves the data folder") {
		t.Errorf("demo forget while serve runs: %v %q", err, errOut)
	}
	stop()

	lines, stop := serve("--demo=false")
	log := strings.Join(lines, "\n")
	if !strings.Contains(log, "this data folder still holds the demo house") || !strings.Contains(log, "demo forget --data "+data) ||
		!strings.Contains(log, "demo_rules=hall-motion-light") || !strings.Contains(log, "hall_light") {
		t.Errorf("no word of the demo's leftovers at start:\n%s", log)
	}
	stop()

	out, errOut, err := ph("demo", "forget")
	if err != nil || !strings.Contains(out, "released the demo's device ids: bedroom_remote, front_door, front_lock, garage_door, hall_light, hall_motion") || !strings.Contains(out, "removed the demo's rules: hall-motion-light") {
		t.Fatalf("demo forget: %v\n%s%s", err, out, errOut)
	}
	st, err := storage.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := st.LoadDeviceIDs(context.Background())
	rules, _ := st.ListRules(context.Background())
	_ = st.Close()
	for _, r := range rows {
		if demo.OwnsKey(r.Key) {
			t.Errorf("the demo still holds %s (%s)", r.ID, r.Key)
		}
	}
	if len(rules) != 0 {
		t.Errorf("rules left: %+v", rules)
	}
	lines, stop = serve("--demo=false")
	defer stop()
	if log := strings.Join(lines, "\n"); strings.Contains(log, "still holds the demo house") {
		t.Errorf("leftovers reported after demo forget:\n%s", log)
	}
	if out, _, _ := runPH(t, bin, env, "demo", "forget", "--data", t.TempDir()); !strings.Contains(out, "nothing of the demo house is left") {
		t.Errorf("demo forget on a fresh folder: %q", out)
	}
}
