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
  pilothouse stdio [flags]       serve MCP over stdin/stdout (for desktop assistants)
  pilothouse sim --broker URL    run only the demo device simulator against a broker
  pilothouse bench [flags]       measure event → command latency with N installed rules

Client commands (talk to a running server: --server URL, --token or PILOTHOUSE_SERVER / PILOTHOUSE_TOKEN):
  pilothouse apply rule.json [--approve]   validate, show the plan, gate risk, install, verify
  pilothouse test rule.json [--trigger ID --value V --state id=value --now T]   simulate, print the trace
  pilothouse rules [enable|disable|remove NAME]
  pilothouse trace RUN_ID [--level summary|full]
  pilothouse healthcheck                   exit 0 when /healthz answers ok

Run "pilothouse <command> -h" for the flags of a command.
`

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, args, false)
	case "stdio":
		err = runServe(ctx, args, true)
	case "sim":
		err = runSim(ctx, args)
	case "bench-load": // started by bench
		err = runBenchLoad(ctx, args)
	case "bench":
		err = runBench(ctx, args)
	case "apply", "test", "rules", "trace":
		err = runCLI(ctx, cmd, args, os.Stdout, os.Stderr, os.Stdin)
	case "healthcheck":
		err = runHealthcheck(ctx, args)
	case "help", "-h", "--help":
		fmt.Print(usage)
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
