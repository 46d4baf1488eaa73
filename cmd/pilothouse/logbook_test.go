package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestLogbookBrokerAndServer: the logbook records a lost broker
// connection and its return, and the server's start; /healthz counts
// what it wrote.
func TestLogbookBrokerAndServer(t *testing.T) {
	_, proxy := brokerBehindProxy(t)
	cfg := testConfig(t)
	cfg.Broker, cfg.Demo, cfg.ClientID = proxy.URL(), false, "house-logbook"
	a := startTestApp(t, cfg)
	proxy.Down()
	testutil.Eventually(t, 10*time.Second, "the client to see the loss", func() bool { return !a.client.Connected() })
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	var got []string
	testutil.Eventually(t, 15*time.Second, "the broker's loss and return in the logbook", func() bool {
		a.eng.FlushLogbook()
		p, err := a.eng.Logbook(context.Background(), engine.LogQuery{})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, en := range p.Entries {
			got = append(got, en.Kind+": "+en.Text)
		}
		return slices.ContainsFunc(got, func(s string) bool {
			return strings.HasPrefix(s, "broker: connected to the broker "+proxy.URL()+" again")
		}) && slices.ContainsFunc(got, func(s string) bool {
			return strings.HasPrefix(s, "broker: lost the connection to the broker "+proxy.URL()+": ")
		})
	})
	if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "server: Pilothouse started") }) {
		t.Errorf("no start in the logbook: %q", got)
	}
	if _, h := getHealth(t, a.URL()); h.Logbook.Written < 3 || h.Logbook.Dropped != 0 || h.Logbook.MaxRows != 100_000 {
		t.Errorf("healthz logbook: %+v", h.Logbook)
	}
}
