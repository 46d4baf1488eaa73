package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestCLIRunsAndHouseTimes: through the real binary, a house in another
// zone than the machine's: pilothouse runs lists the demo rule's firing
// and the deploy that installed it, both under the rule's name, with each
// filter, and runs and rules print times in the house's zone.
func TestCLIRunsAndHouseTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const zone = "Pacific/Auckland"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	bin, env, data := buildBinary(t), binEnv(t), t.TempDir()
	env = append(env, "TZ=UTC")
	startServe(t, bin, env, data, "--tz", zone)
	ph := func(args ...string) (string, string, error) {
		return runPH(t, bin, env, append(args, "--data", data)...)
	}
	if out, errOut, err := ph("apply", "examples/rules/hall-motion-light.json"); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := ph("sim", "set", "hall_motion", "occupancy=true"); err != nil {
		t.Fatalf("sim set: %v\n%s%s", err, out, errOut)
	}
	var out string
	testutil.Eventually(t, 10*time.Second, "the firing in pilothouse runs", func() bool {
		out, _, err = ph("runs", "--kind", "firing")
		return err == nil && strings.Contains(out, "firing  success  hall-motion-light")
	})
	abbr, _ := time.Now().In(loc).Zone()
	if !strings.Contains(out, "STARTED ("+zone+")") || !strings.Contains(out, time.Now().In(loc).Format("2006-01-02 15:")) {
		t.Errorf("runs does not show the house's zone %s:\n%s", zone, out)
	}
	rules, _, _ := ph("rules")
	if !strings.Contains(rules, "fired "+time.Now().In(loc).Format("2006-01-02 15:")) || !strings.Contains(rules, " "+abbr+": success") {
		t.Errorf("rules does not show the firing in the house's zone (%s):\n%s", abbr, rules)
	}
	future := time.Now().Add(time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		args      []string
		rows      int    // data rows (-1: an error)
		says      string // in stdout, or stderr for an error
		mustNotBe string
	}{
		{[]string{"runs"}, 2, "deploy  success  hall-motion-light", ""}, // the rule the deploy installed
		{[]string{"runs", "--rule", "hall-motion-light", "--status", "success"}, 2, "firing  success  hall-motion-light", ""},
		{[]string{"runs", "--rule", "hall-motion-light", "--kind", "firing"}, 1, "firing  success  hall-motion-light", "deploy"},
		{[]string{"runs", "--kind", "deploy"}, 1, "deploy", "firing"},
		{[]string{"runs", "--limit", "1"}, 1, "firing", "deploy"},
		{[]string{"runs", "--since", "1h"}, 2, "firing", ""},
		{[]string{"runs", "--since", future}, 0, "no runs", ""},
		{[]string{"runs", "--rule", "nope"}, 0, "no runs", ""},
		{[]string{"runs", "--status", "failed"}, 0, "no runs", ""},
		{[]string{"runs", "--limit", "0"}, -1, "--limit 0: want 1 to 500", ""},
		{[]string{"runs", "--since", "yesterday"}, -1, `--since "yesterday": want a time`, ""},
	} {
		out, errOut, err := ph(c.args...)
		if c.rows < 0 {
			if err == nil || !strings.Contains(errOut, c.says) {
				t.Errorf("%v: err=%v stderr %q, want %q", c.args, err, errOut, c.says)
			}
			continue
		}
		rows := strings.Count(out, "\n") - 2 // less the header and the trace hint
		if c.rows == 0 {
			rows = 0
		}
		if err != nil || rows != c.rows || !strings.Contains(out, c.says) || (c.mustNotBe != "" && strings.Contains(out, c.mustNotBe)) {
			t.Errorf("%v: err=%v, %d rows, want %d saying %q (not %q):\n%s%s", c.args, err, rows, c.rows, c.says, c.mustNotBe, out, errOut)
		}
	}
	// apply says when a schedule fires next in the house's zone (was RFC
	// 3339 in whatever zone the answer carried: "Z").
	nightly := filepath.Join(t.TempDir(), "nightly.json")
	if err := os.WriteFile(nightly, []byte(`{"name": "nightly", "triggers": [{"id": "three", "cron": "0 3 * * *"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	applied, errOut, err := ph("apply", nightly)
	now := time.Now().In(loc)
	next := time.Date(now.Year(), now.Month(), now.Day(), 3, 0, 0, 0, loc)
	if !next.After(now) {
		next = time.Date(now.Year(), now.Month(), now.Day()+1, 3, 0, 0, 0, loc)
	}
	if err != nil || !strings.Contains(applied, "  next fire: "+houseTime(next, loc)+"\n") || !strings.Contains(applied, "(next "+houseTime(next, loc)+")") {
		t.Errorf("apply does not give the next fire in the house's zone (%s): %v\n%s%s", houseTime(next, loc), err, applied, errOut)
	}
}

// TestCLIWithoutServerAndBadJSON: with nothing answering, every client
// command says what to do instead of the transport's error chain; a
// malformed rule file is located as path:line:column.
func TestCLIWithoutServerAndBadJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, env := buildBinary(t), binEnv(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
	rule, _ := filepath.Abs(filepath.Join("..", "..", "examples", "rules", "hall-motion-light.json"))
	for _, args := range [][]string{{"rules"}, {"runs"}, {"trace", "r1"}, {"apply", rule}, {"test", rule}, {"sim", "set", "hall_motion", "occupancy=true"}} {
		_, errOut, err := runPH(t, bin, env, append(args, "--server", url)...)
		want := "no pilothouse serve answers at " + url + "; start it with `pilothouse serve`"
		if err == nil || !strings.Contains(errOut, want) || strings.Contains(errOut, "transport error") {
			t.Errorf("%v without a server: err=%v, stderr %q, want %q", args, err, errOut, want)
		}
	}
	// Without --server, the data folder's serve is looked for, then the
	// default address: the message names the address it tried.
	if _, errOut, err := runPH(t, bin, append(env, "PILOTHOUSE_SERVER=http://127.0.0.1:1/mcp"), "rules"); err == nil || !strings.Contains(errOut, "no pilothouse serve answers at http://127.0.0.1:1/mcp") {
		t.Errorf("PILOTHOUSE_SERVER without a server: %v %q", err, errOut)
	}
	dir := t.TempDir()
	for _, c := range []struct{ body, says string }{
		{"{\n  \"name\": \"x\",\n  \"steps\": [1,,2]\n}\n", "bad.json:3:15: invalid character ','"},
		{"{\n  \"name\": \"x\"\n", "bad.json:2:14: unexpected end of JSON input"},
		{"[1]", "bad.json:1:1: want a JSON object, found array"},
	} {
		f := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(f, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"apply", "test"} {
			_, errOut, err := runPH(t, bin, env, cmd, f, "--server", url)
			if err == nil || !strings.Contains(errOut, c.says) || !strings.Contains(errOut, "^") {
				t.Errorf("%s %q: err=%v, stderr %q, want %q and a caret", cmd, c.body, err, errOut, c.says)
			}
		}
	}
}
