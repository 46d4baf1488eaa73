package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandHelp: pilothouse -h lists every command of the table,
// and "pilothouse NAME -h" of each exits 0 with its usage; rules -h lists
// its verbs.
func TestEveryCommandHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, env := buildBinary(t), binEnv(t)
	top, _, err := runPH(t, bin, env, "-h")
	if err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, c := range commands {
		if !strings.Contains(top, "pilothouse "+c.name+" ") {
			t.Errorf("pilothouse -h lacks %s:\n%s", c.name, top)
		}
		out, errOut, err := runPH(t, bin, env, c.name, "-h")
		help := out + errOut
		want := "usage: pilothouse " + c.name
		if c.name == "serve" || c.name == "stdio" {
			want = "Usage of pilothouse " + c.name
		}
		if err != nil || !strings.Contains(help, want) {
			t.Errorf("%s -h: err=%v, lacks %q:\n%s", c.name, err, want, help)
		}
		for _, v := range c.verbs {
			if !strings.Contains(help, v) {
				t.Errorf("%s -h does not list %s:\n%s", c.name, v, help)
			}
		}
	}
	_, rulesHelp, _ := runPH(t, bin, env, "rules", "-h")
	for _, want := range []string{"rules enable NAME", "rules disable NAME", "rules remove NAME", "--server", "--data"} {
		if !strings.Contains(rulesHelp, want) {
			t.Errorf("rules -h lacks %q:\n%s", want, rulesHelp)
		}
	}
}

// TestCompletionFromTable: each shell's script is generated from the
// command table; bash's completes commands, verbs and flags when run.
func TestCompletionFromTable(t *testing.T) {
	for _, shell := range completionShells {
		var out, errb strings.Builder
		if err := runCompletion([]string{shell}, &out, &errb); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		for _, c := range commands {
			if !strings.Contains(out.String(), c.name) {
				t.Errorf("%s completion lacks %s", shell, c.name)
			}
			for _, f := range c.completionFlags() {
				if !strings.Contains(out.String(), f.name) {
					t.Errorf("%s completion lacks %s's flag %s", shell, c.name, f.name)
				}
			}
		}
		if path, err := exec.LookPath(shell); err == nil && shell != "bash" {
			file := filepath.Join(t.TempDir(), "c."+shell)
			if err := os.WriteFile(file, []byte(out.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(path, "-n", file).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, b)
			}
		}
	}
	if err := runCompletion([]string{"tcsh"}, &strings.Builder{}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "bash|zsh|fish") {
		t.Errorf("an unknown shell: %v", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	var script strings.Builder
	_ = runCompletion([]string{"bash"}, &script, &strings.Builder{})
	for _, c := range []struct {
		words string
		want  string
	}{
		{"pilothouse ru", "rules runs"},
		{"pilothouse rules ''", "enable disable remove"},
		{"pilothouse sim ''", "press set"},
		{"pilothouse runs --si", "--since"},
		{"pilothouse apply --app", "--approve"},
		{"pilothouse serve --broker-l", "--broker-listen"},
		{"pilothouse completion ''", "bash zsh fish"},
	} {
		prog := script.String() + "\nCOMP_WORDS=(" + c.words + "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _pilothouse; echo \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("complete %q: %v %q, want %q", c.words, err, out, c.want)
		}
	}
}
