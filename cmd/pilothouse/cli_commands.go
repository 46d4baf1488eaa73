package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/bench"
	"github.com/pilothouse/pilothouse/rules"
)

// command is one pilothouse command: the one table that pilothouse -h,
// each command's -h and the shell completions are made from.
type command struct {
	name    string
	args    string   // what follows the name, for the usage line
	summary string   // one line for pilothouse -h
	help    string   // more for pilothouse NAME -h ("" = the summary)
	verbs   []string // words that may follow the name (rules: enable, disable, remove)
	// flagSet returns a fresh flag set with the command's flags (nil: none).
	flagSet func() *flag.FlagSet
}

// commands is the table, in the order pilothouse -h lists them.
var commands = []command{
	{name: "serve", args: "[flags]", summary: "run the server: MCP at http://127.0.0.1:8080/mcp, web UI at / (the default command)",
		flagSet: configFlagSet("serve")},
	{name: "stdio", args: "[flags]", summary: "MCP over stdin/stdout (for desktop assistants); bridges to the running serve of the same data folder, else runs the house itself",
		flagSet: configFlagSet("stdio")},
	{name: "sim", args: "press DEVICE ACTION | set DEVICE PROPERTY=VALUE... | --broker URL",
		summary: "make a demo device of the running serve act now (sim set hall_motion occupancy=true), or run only the demo devices against a broker",
		help: "sim press DEVICE ACTION        press a button, e.g. sim press bedroom_remote toggle (or on, off_double, toggle_hold...; a bare single, double, hold... is the toggle button's)\n" +
			"sim set DEVICE PROPERTY=VALUE...  set properties, e.g. sim set hall_motion occupancy=true; values are JSON when they parse, else text\n" +
			"sim --broker URL               run only the demo devices against any broker (see pilothouse sim --broker URL -h)\n" +
			"press and set go to the serve running the data folder (or --server), as the owner; a wrong device, property or value is refused with the allowed ones.",
		verbs: simVerbs, flagSet: simFlagSet},
	{name: "bench", args: "[flags]", summary: "measure event → command latency with N installed rules",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(bench.Flags).Register(fs) })},
	{name: "apply", args: "rule.json [--approve] [--input JSON]", summary: "validate, show the plan, gate risk, install, verify",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(applyOpts).register(fs) })},
	{name: "test", args: "rule.json [--input JSON] [--trigger ID --value V --from V --state id=value --now T --at OFFSET:id=value --event OFFSET:id=payload]",
		summary: "simulate a rule against the live catalog, print the trace", flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(testOpts).register(fs) })},
	{name: "rules", args: "[enable|disable|remove NAME]", summary: "list the installed rules, or enable, disable or remove one",
		help: "rules                 list the installed rules: status, triggers, next fire, last firings\n" +
			"rules enable NAME     arm a disabled rule again\n" +
			"rules disable NAME    stop a rule firing (cancels its runs in progress), keeping it\n" +
			"rules remove NAME     uninstall a rule",
		verbs: ruleVerbs, flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(conn).register(fs) })},
	{name: "runs", args: "[--rule NAME] [--status S] [--kind K] [--since T] [--limit N]", summary: "list runs (firings, deploys, tests), newest first",
		help: "--since takes a time (RFC 3339) or a duration back from now (10m, 2h); times are shown in the house's zone.\n" +
			"Statuses: " + strings.Join(runStatuses(), ", ") + ".",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(runsOpts).register(fs) })},
	{name: "trace", args: "RUN_ID [--level summary|full]", summary: "print a run's trace",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(traceOpts).register(fs) })},
	{name: "lookup", args: "[PART_OF_A_NAME] [--kind K] [--tag area:X] [--limit N]", summary: "list the catalog entries (ids to write in a rule) the token may see",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(lookupOpts).register(fs) })},
	{name: "approvals", args: "[--all]", summary: "risky deploys waiting for a human's approval (the risk gate)",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) {
			new(conn).register(fs)
			fs.Bool("all", false, "also list decided, used and expired requests")
		})},
	{name: "approve", args: "ID", summary: "approve a waiting deploy (as the owner or an approver); the assistant's retry installs it",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(conn).register(fs) })},
	{name: "decline", args: "ID", summary: "decline a waiting deploy: nothing is installed",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { new(conn).register(fs) })},
	{name: "healthcheck", args: "[--url URL]", summary: "exit 0 when /healthz answers ok (the container's health check)",
		flagSet: clientFlagSet(func(fs *flag.FlagSet) { healthFlags(fs) })},
	{name: "demo", args: "forget [--data DIR] [--keep-rules]", summary: "from the demo to a real house in the same data folder: release the demo's device ids and rules",
		help: "demo forget    with the house stopped, release the device ids the demo's devices hold (a real device named\n" +
			"               hall_light would otherwise become hall_light_2) and remove the rules that use them (--keep-rules: keep them)",
		verbs: []string{"forget"}, flagSet: clientFlagSet(func(fs *flag.FlagSet) { demoFlags(fs) })},
	{name: "completion", args: "bash|zsh|fish", summary: "print the shell completion script, e.g. source <(pilothouse completion bash)",
		verbs: completionShells},
	{name: "version", summary: "print the version and the revision it was built from (also --version)"},
}

var ruleVerbs = []string{"enable", "disable", "remove"}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func clientFlagSet(register func(fs *flag.FlagSet)) func() *flag.FlagSet {
	return func() *flag.FlagSet {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		register(fs)
		return fs
	}
}

// configFlagSet is the flag set serve, stdio and sim --broker parse (the
// configuration's flags).
func configFlagSet(name string) func() *flag.FlagSet {
	return func() *flag.FlagSet {
		c := defaultConfig()
		fs := commandFlags(name)
		var file string
		fs.StringVar(&file, "config", "", "YAML configuration file")
		newFlagVars(c).register(fs, c)
		return fs.FlagSet
	}
}

// simFlagSet is both sim's: press and set's (the connection) and sim
// --broker's (the configuration's).
func simFlagSet() *flag.FlagSet {
	fs := configFlagSet("sim")()
	new(conn).register(fs)
	return fs
}

// usage is pilothouse -h: the commands of the table.
func usage() string {
	var b strings.Builder
	b.WriteString("pilothouse — let an AI assistant automate your home, safely (Pilotage automation/1 over MCP)\n\nUsage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  pilothouse %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  pilothouse %-12s %s\n", "--version", "the same as pilothouse version")
	b.WriteString(`

Client commands (apply, test, rules, runs, trace, lookup, sim press/set) talk to the serve running the
data folder (--data, PILOTHOUSE_DATA: it announces itself in server.json with a local token), or to
--server URL with --token (PILOTHOUSE_SERVER, PILOTHOUSE_TOKEN).

Data: the per-user data folder ($XDG_DATA_HOME/pilothouse, else ~/.local/share/pilothouse;
a ./pilothouse-data in the working directory is still used), or --data / PILOTHOUSE_DATA.

Run "pilothouse <command> -h" for a command's arguments and flags (serve: "pilothouse serve -h").
`)
	return b.String()
}

// newFlagSet is a client command's flag set; its -h prints the command's
// usage from the table.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("pilothouse "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { commandUsage(fs.Output(), name, fs) }
	return fs
}

func commandUsage(w io.Writer, name string, fs *flag.FlagSet) {
	c, _ := lookupCommand(name)
	fmt.Fprintf(w, "usage: pilothouse %s %s\n\n", name, c.args)
	help := c.help
	if help == "" {
		help = c.summary
	}
	for _, l := range strings.Split(help, "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w, "\nflags:")
	fs.VisitAll(func(f *flag.Flag) {
		typ, use := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s\n    \t%s", strings.TrimSpace(f.Name+" "+typ), use)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// runStatuses are the statuses a run can end with.
func runStatuses() []string {
	var out []string
	for _, s := range rules.RunStatuses {
		out = append(out, s.Status)
	}
	return out
}
