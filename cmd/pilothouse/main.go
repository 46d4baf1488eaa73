// Command pilothouse is the Pilothouse server (serve, stdio), the demo
// device simulator (sim) and a command-line Pilotage client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/bench"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 && (isHelp(args[0]) || isVersion(args[0])) {
		cmd, args = args[0], args[1:] // "pilothouse -h" is the subcommands, "pilothouse serve -h" serve's flags
	}
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, args)
	case "stdio":
		err = runStdio(ctx, args, os.Stdin, os.Stdout)
	case "sim":
		if isSimVerb(args) {
			err = runCLI(ctx, cmd, args, os.Stdout, os.Stderr, os.Stdin)
			break
		}
		err = runSim(ctx, args)
	case "bench-load": // started by bench
		err = bench.RunLoad(ctx, args)
	case "bench":
		err = runBench(ctx, args)
	case "apply", "test", "rules", "runs", "trace", "lookup", "approvals", "approve", "decline":
		err = runCLI(ctx, cmd, args, os.Stdout, os.Stderr, os.Stdin)
	case "healthcheck":
		err = runHealthcheck(ctx, args)
	case "demo":
		err = runDemo(ctx, args, os.Stdout, os.Stderr)
	case "completion":
		err = runCompletion(args, os.Stdout, os.Stderr)
	case "help", "-h", "-help", "--help":
		fmt.Print(usage())
		return
	case "version", "-version", "--version":
		runVersion(args)
		return
	default:
		fmt.Fprintf(os.Stderr, "pilothouse: unknown command %q\n\n%s", cmd, usage())
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

// runVersion prints the version, or its usage with -h.
func runVersion(args []string) {
	if len(args) > 0 && isHelp(args[0]) {
		c, _ := lookupCommand("version")
		fmt.Printf("usage: pilothouse version\n\n  %s\n", c.summary)
		return
	}
	if len(args) > 0 {
		fmt.Fprintf(os.Stderr, "pilothouse: version takes no arguments (got %q)\n", args[0])
		os.Exit(2)
	}
	fmt.Println(versionString())
}

func isHelp(a string) bool    { return a == "-h" || a == "-help" || a == "--help" }
func isVersion(a string) bool { return a == "-version" || a == "--version" }
