package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// throttleChildEnv carries "<data folder>|<broker URL>" to the house
// process of TestThrottleSurvivesKill.
const throttleChildEnv = "PILOTHOUSE_THROTTLE_CHILD"

const throttledPorch = `{"name": "throttled-porch", "throttle": "1h",
  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "TOGGLE"}}]}`

// TestThrottleSurvivesKill: a house process killed (SIGKILL) as soon as
// its throttled rule's command is on the bus, before the recorder wrote
// the firing, keeps the window: the next process on the same data folder
// ends the next press within the hour throttled and sends nothing.
func TestThrottleSurvivesKill(t *testing.T) {
	ctx := context.Background()
	h := withBroker(t, Config{}) // the broker and devices; the engine runs in the house processes
	cmds := h.watch("zigbee2mqtt/porch_light/set")
	h.startSim(h.dial(h.broker.URL(), "throttle-parent", 0))
	proc := startHouseProcess(t, h.dir, h.broker.URL())
	if err := h.sim.Press(ctx, "on"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the command", func() bool { return cmds.count() == 1 })
	_ = proc.Process.Kill()
	_ = proc.Wait()
	startHouseProcess(t, h.dir, h.broker.URL())
	if err := h.sim.Press(ctx, "on"); err != nil {
		t.Fatal(err)
	}
	store, err := storage.Open(ctx, h.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var last storage.Run
	testutil.Eventually(t, 5*time.Second, "the second press's firing", func() bool {
		runs, err := store.ListRuns(ctx, storage.RunFilter{Rule: "throttled-porch", Kind: "firing", Limit: 1})
		if err != nil || len(runs) == 0 || runs[0].Status == rules.StatusInterrupted {
			return false
		}
		last = runs[0]
		return true
	})
	if last.Status != rules.StatusThrottled || cmds.count() != 1 {
		t.Errorf("after the kill: %s with %d commands, want throttled with 1", last.Status, cmds.count())
	}
}

// startHouseProcess runs TestThrottleChild in a new process on dir and
// broker, and returns once its rule is armed; it is killed at the end.
func startHouseProcess(t *testing.T, dir, broker string) *exec.Cmd {
	t.Helper()
	cmd, _ := startChild(t, "TestThrottleChild", throttleChildEnv+"="+dir+"|"+broker)
	return cmd
}

// startChild runs the test named child in a new process with env added,
// and returns once it printed "house ready", with the lines it printed
// before; it is killed at the end.
func startChild(t *testing.T, child, env string) (*exec.Cmd, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	type printed struct {
		lines []string
		ready bool
	}
	ready := make(chan printed, 2)
	go func() {
		var lines []string
		seen := false
		sc := bufio.NewScanner(out)
		for sc.Scan() { // to the end: a full pipe would block the child
			switch {
			case seen:
			case sc.Text() == "house ready":
				ready <- printed{lines, true}
				seen = true
			default:
				lines = append(lines, sc.Text())
			}
		}
		ready <- printed{}
	}()
	select {
	case p := <-ready:
		if !p.ready {
			t.Fatal("the house process ended before it was ready")
		}
		return cmd, p.lines
	case <-time.After(30 * time.Second):
		t.Fatal("the house process was not ready within 30 s")
	}
	return nil, nil
}

// TestThrottleChild is the house process of TestThrottleSurvivesKill
// (skipped otherwise): discovery, storage on the given folder, the
// engine with the throttled rule deployed once; it runs until killed.
func TestThrottleChild(t *testing.T) {
	dir, broker, ok := strings.Cut(os.Getenv(throttleChildEnv), "|")
	if !ok {
		t.Skip("the house process of TestThrottleSurvivesKill")
	}
	h := &house{t: t, dir: dir}
	h.devs = newCatalog()
	h.listen(h.dial(broker, "throttle-house", 0))
	h.awaitDemo()
	h.start()
	if _, err := h.eng.GetRule(context.Background(), "throttled-porch", 0); err != nil {
		h.deploy(throttledPorch)
	}
	fmt.Println("house ready")
	select {}
}
