package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/bench"
)

// runBench is pilothouse bench: it measures the server's own wiring
// (startApp), as serve runs it.
func runBench(ctx context.Context, args []string) error {
	bf := &bench.Flags{}
	fs := newFlagSet("bench", os.Stderr)
	bf.Register(fs)
	if err := parseFlagSet(fs, args); err != nil {
		return err
	}
	return bench.Run(ctx, bf, startBenchHouse)
}

// startBenchHouse starts the server with the defaults, no demo, no HTTP,
// its own data folder and topics, and the embedded broker on a free
// loopback port unless brokerURL names another.
func startBenchHouse(ctx context.Context, dir, brokerURL, base string) (*bench.House, error) {
	c := defaultConfig()
	c.DataDir, c.Broker, c.BrokerListen, c.ClientID = dir, brokerURL, "127.0.0.1:0", "bench-engine"
	c.Z2MBase, c.HAPrefix = base, base+"-ha"
	c.Demo = false
	a, err := startApp(ctx, c, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	if err != nil {
		return nil, err
	}
	if a.broker != nil {
		brokerURL = a.broker.URL()
	}
	return &bench.House{Engine: a.eng, Devices: a.devs, Broker: brokerURL, Stop: a.stop}, nil
}
