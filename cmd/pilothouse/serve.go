package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/stdiobridge"
	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// runServe runs the server until ctx ends (SIGINT/SIGTERM), then shuts every
// part down in reverse start order within the shutdown budget. It announces
// itself in the data folder, where pilothouse stdio finds it.
func runServe(ctx context.Context, args []string) error {
	cfg, err := parseFlags("serve", args)
	if err != nil {
		return err
	}
	log := newLogger(os.Stderr, cfg.LogLevel, cfg.LogJSON, cfg.zone())
	if note := resolveDataDir(cfg); note != "" {
		log.Warn(note)
	}
	lock, err := lockHouse(cfg.DataDir, "serve", log)
	if errors.Is(err, errHeld) {
		return heldError(cfg.DataDir, readHolder(cfg.DataDir))
	}
	if err != nil {
		return err
	}
	defer lock.release()
	t0 := time.Now()
	a, err := startApp(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	a.announce()
	if !cfg.Demo {
		warnDemoLeftovers(ctx, a.store, cfg.DataDir, log)
	}
	a.logStarted(t0)
	<-ctx.Done()
	a.shutdown()
	return nil
}

// runStdio serves MCP on stdin/stdout. When a serve runs this house (the
// same data folder), it bridges to it; otherwise it runs the house in this
// process. A failure to start is told to the MCP client in words.
func runStdio(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	cfg, err := parseFlags("stdio", args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return stdioFailed(ctx, in, out, err)
	}
	log := newLogger(os.Stderr, cfg.LogLevel, cfg.LogJSON, cfg.zone())
	if note := resolveDataDir(cfg); note != "" {
		log.Warn(note)
	}
	// Lines from the client are bounded like every request (whether bridged
	// or served here).
	in = mcpserver.LimitLines(in, cfg.Limits.MaxRequestBytes, log)
	lock, ep, err := houseOrHolder(ctx, cfg.DataDir, cfg.StdioTimeout, log)
	if err != nil {
		return stdioFailed(ctx, in, out, err)
	}
	if lock == nil {
		log.Info("bridging MCP to the server running this house", "mcp", ep.MCP, "pid", ep.PID, "data", cfg.DataDir)
		return stdiobridge.Run(ctx, ep.MCP, ep.Token, in, out, log, cfg.StdioTimeout)
	}
	defer lock.release()
	log.Info("no pilothouse serve runs this house: running it in this process", "data", cfg.DataDir)
	t0 := time.Now()
	a, err := startApp(ctx, cfg, log, false)
	if err != nil {
		return stdioFailed(ctx, in, out, fmt.Errorf("%w (no pilothouse serve is running the data folder %s, so stdio tried to run the house itself)", err, cfg.DataDir))
	}
	a.logStarted(t0)
	err = a.mcp.Serve(ctx, in, out)
	if err != nil && ctx.Err() != nil {
		err = nil
	}
	a.shutdown()
	return err
}

// logStarted says what runs: where the configuration came from, the data
// folder, how many principals and devices.
func (a *app) logStarted(t0 time.Time) {
	cfgFile := a.cfg.ConfigFile
	if cfgFile == "" {
		cfgFile = "none (defaults, PILOTHOUSE_* and flags)"
	}
	devs, helps := 0, 0
	for _, e := range a.devs.Snapshot().Entries() {
		switch {
		case e.Kind != pilotage.KindDevice:
		case slices.Contains(e.Tags, "type:helper"):
			helps++
		default:
			devs++
		}
	}
	principals := fmt.Sprint(len(a.cfg.Principals))
	if len(a.cfg.Principals) == 0 {
		principals = "0 (every caller is the owner: loopback only)"
	}
	a.log.Info("pilothouse started", "in", time.Since(t0).Round(time.Millisecond), "version", versionString(),
		"config", cfgFile, "data", a.cfg.DataDir, "principals", principals, "devices", devs, "helpers", helps,
		"time_zone", a.zoneSource(), "sun", a.sunSource())
}

// zoneSource says which time zone schedules use, and where it came from.
func (a *app) zoneSource() string {
	z := a.cfg.engineConfig().TimeZone.String()
	if a.cfg.TimeZone != "" {
		return z + " (configured)"
	}
	return z + " (the system's: set --tz, or time_zone in the configuration file, for your home)"
}

// sunSource says where sun triggers' times are computed for.
func (a *app) sunSource() string {
	switch {
	case a.cfg.Latitude != nil:
		return fmt.Sprintf("%.4f, %.4f (configured)", *a.cfg.Latitude, *a.cfg.Longitude)
	case a.cfg.Demo:
		return "the demo house's example location, Greenwich: set --lat and --lon (or location in the configuration file) for your home"
	}
	return "no location: sun triggers are refused until --lat and --lon (or location in the configuration file) are set"
}

// shutdown stops every part within the shutdown budget.
func (a *app) shutdown() {
	a.log.Info("shutting down")
	done := make(chan struct{})
	go func() { a.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		a.log.Warn("shutdown took longer than 2s; exiting")
	}
}

// runSim runs only the demo devices against a broker.
func runSim(ctx context.Context, args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		// The verbs' usage first; parseFlags then prints the flags.
		c, _ := lookupCommand("sim")
		fmt.Fprintf(os.Stderr, "usage: pilothouse sim %s\n  %s\n\n", c.args, strings.ReplaceAll(c.help, "\n", "\n  "))
	}
	cfg, err := parseFlags("sim", args)
	if err != nil {
		return err
	}
	if cfg.Broker == "" {
		return fmt.Errorf("sim needs --broker tcp://host:port")
	}
	if err := cfg.check(false); err != nil {
		return err
	}
	log := newLogger(os.Stderr, cfg.LogLevel, cfg.LogJSON, cfg.zone())
	c, err := mqtt.Dial(ctx, mqtt.Options{Broker: cfg.Broker, ClientID: cmp.Or(cfg.ClientID, legacyClientID+"-"+randomHex(3)) + "-sim", Username: cfg.MQTTUser, Password: cfg.MQTTPassword, TLS: cfg.tlsConfig(), Logger: log})
	if err != nil {
		return err
	}
	defer c.Close()
	sim := demo.New(c, demo.Options{Base: cfg.Z2MBase, HAPrefix: cfg.HAPrefix, Pace: cfg.DemoPace, NotifyTopic: "pilothouse/notify/phone", Logger: log})
	if err := sim.Start(ctx); err != nil {
		return err
	}
	defer sim.Close()
	log.Info("demo devices running", "broker", cfg.Broker)
	<-ctx.Done()
	return nil
}
