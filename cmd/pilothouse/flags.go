package main

import (
	"flag"
	"fmt"
	"time"
)

// simUses reports whether pilothouse sim uses a flag: the broker
// connection, the topics and the demo's pace. Its -h lists only these, and
// it refuses the others instead of ignoring them.
func simUses(name string) bool {
	switch name {
	case "config", "broker", "mqtt-client-id", "mqtt-user", "mqtt-password", "mqtt-ca", "mqtt-insecure",
		"z2m-base", "ha-prefix", "demo-pace", "log-level", "log-json":
		return true
	}
	return false
}

// cmdFlags is a command's flag set: it registers only the flags the
// command uses (only == nil: all).
type cmdFlags struct {
	*flag.FlagSet
	only func(name string) bool
}

func commandFlags(name string) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet("pilothouse "+name, flag.ContinueOnError)}
	if name == "sim" {
		f.only = simUses
	}
	return f
}

func (f *cmdFlags) uses(name string) bool { return f.only == nil || f.only(name) }

func (f *cmdFlags) StringVar(p *string, name, value, usage string) {
	if f.uses(name) {
		f.FlagSet.StringVar(p, name, value, usage)
	}
}

func (f *cmdFlags) BoolVar(p *bool, name string, value bool, usage string) {
	if f.uses(name) {
		f.FlagSet.BoolVar(p, name, value, usage)
	}
}

func (f *cmdFlags) DurationVar(p *time.Duration, name string, value time.Duration, usage string) {
	if f.uses(name) {
		f.FlagSet.DurationVar(p, name, value, usage)
	}
}

// envError names the variable, what it sets and the form it wants.
func envError(key, value string, f *flag.Flag) error {
	want := "a valid value"
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		want = "true or false"
	} else if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case time.Duration:
			want = `a duration such as "20s", "1h30m" or "500ms"`
		case int, int64, uint, uint64:
			want = "an integer"
		case float64:
			want = "a number"
		}
	}
	return fmt.Errorf("environment variable %s=%q: want %s (it sets --%s: %s)", key, value, want, f.Name, f.Usage)
}
