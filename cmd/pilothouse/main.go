// Command pilothouse is the Pilothouse server (serve, stdio), the demo
// device simulator (sim) and a command-line Pilotage client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `pilothouse — let an AI assistant automate your home, safely (Pilotage automation/1 over MCP)

Usage:
  pilothouse [serve] [flags]     run the server: MCP at http://127.0.0.1:8080/mcp, web UI at /
  pilothouse stdio [flags]       MCP over stdin/stdout (for desktop assistants); bridges to the
                                 running serve of the same data folder, else runs the house itself
  pilothouse sim --broker URL    run only the demo device simulator against a broker
  pilothouse bench [flags]       measure event → command latency with N installed rules
  pilothouse --version           print the version and the revision it was built from

Client commands (talk to a running server: --server URL, --token or PILOTHOUSE_SERVER / PILOTHOUSE_TOKEN):
  pilothouse apply rule.json [--approve] [--input JSON]   validate, show the plan, gate risk, install, verify
  pilothouse test rule.json [--input JSON] [--trigger ID --value V --state id=value --now T]   simulate, print the trace
  pilothouse rules [enable|disable|remove NAME]
  pilothouse trace RUN_ID [--level summary|full]
  pilothouse approvals [--all]             risky deploys waiting for a human's approval
  pilothouse approve ID | decline ID       decide one (as the owner or an approver)
  pilothouse healthcheck                   exit 0 when /healthz answers ok

Data: the per-user data folder ($XDG_DATA_HOME/pilothouse, else ~/.local/share/pilothouse;
a ./pilothouse-data in the working directory is still used), or --data / PILOTHOUSE_DATA.

Run "pilothouse <command> -h" for the flags of a command (serve: "pilothouse serve -h").
`

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 && (isHelp(args[0]) || isVersion(args[0])) {
		cmd = args[0] // "pilothouse -h" is the subcommands, "pilothouse serve -h" serve's flags
	}
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, args)
	case "stdio":
		err = runStdio(ctx, args, os.Stdin, os.Stdout)
	case "sim":
		err = runSim(ctx, args)
	case "bench-load": // started by bench
		err = runBenchLoad(ctx, args)
	case "bench":
		err = runBench(ctx, args)
	case "apply", "test", "rules", "trace", "approvals", "approve", "decline":
		err = runCLI(ctx, cmd, args, os.Stdout, os.Stderr, os.Stdin)
	case "healthcheck":
		err = runHealthcheck(ctx, args)
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return
	case "version", "-version", "--version":
		fmt.Println(versionString())
		return
	default:
		fmt.Fprintf(os.Stderr, "pilothouse: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pilothouse:", err)
		os.Exit(1)
	}
}

func isHelp(a string) bool    { return a == "-h" || a == "-help" || a == "--help" }
func isVersion(a string) bool { return a == "-version" || a == "--version" }
