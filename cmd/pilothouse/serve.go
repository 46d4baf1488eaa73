package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/mqtt"
)

// runServe runs the server until ctx ends (SIGINT/SIGTERM), then shuts every
// part down in reverse start order within the shutdown budget.
func runServe(ctx context.Context, args []string, stdio bool) error {
	name := "serve"
	if stdio {
		name = "stdio"
	}
	cfg, err := parseFlags(name, args)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel, cfg.LogJSON)
	t0 := time.Now()
	a, err := startApp(ctx, cfg, log, !stdio)
	if err != nil {
		return err
	}
	log.Info("pilothouse started", "in", time.Since(t0).Round(time.Millisecond))
	if stdio {
		err = a.mcp.ServeStdio(ctx, os.Stdin, os.Stdout)
		if err != nil && ctx.Err() != nil {
			err = nil
		}
	} else {
		<-ctx.Done()
	}
	log.Info("shutting down")
	done := make(chan struct{})
	go func() { a.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		log.Warn("shutdown took longer than 2s; exiting")
	}
	return err
}

// runSim runs only the demo devices against a broker.
func runSim(ctx context.Context, args []string) error {
	cfg, err := parseFlags("sim", args)
	if err != nil {
		return err
	}
	if cfg.Broker == "" {
		return fmt.Errorf("sim needs --broker tcp://host:port")
	}
	log := newLogger(cfg.LogLevel, cfg.LogJSON)
	c, err := mqtt.Dial(ctx, mqtt.Options{Broker: cfg.Broker, ClientID: cfg.ClientID + "-sim", Username: cfg.MQTTUser, Password: cfg.MQTTPassword, Logger: log})
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
