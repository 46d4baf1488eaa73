package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
	"github.com/pilothouse/pilothouse/web"
)

// app is one running Pilothouse: every part with its stop function, stopped
// in reverse start order.
type app struct {
	cfg     *Config
	log     *slog.Logger
	broker  *mqtt.Broker
	client  mqttConn
	store   *storage.Store
	devs    *devices.Catalog
	sim     *demo.Sim
	eng     *engine.Engine
	helpers *helpers.Manager
	mcp     *mcpserver.Server
	http    *http.Server
	guard   *mcpserver.Guard
	ln      net.Listener
	stops   []func()

	instance   string // this run's id, in /healthz and the endpoint file
	localToken string // the house's local token (see mcpPrincipals)
	announced  announceState
	door       *frontDoor // HTTP from the start (see listen)
}

// startApp starts the parts in dependency order; on any failure it stops
// what it started and returns the error (start-or-roll-back).
func startApp(ctx context.Context, cfg *Config, log *slog.Logger, withHTTP bool) (a *app, err error) {
	a = &app{cfg: cfg, log: log}
	defer func() {
		if err != nil && a != nil {
			a.stop()
		}
		if err != nil {
			a = nil
		}
	}()
	if err := cfg.check(withHTTP); err != nil {
		return nil, err
	}
	a.instance = randomHex(8)
	if withHTTP {
		if err := a.listen(); err != nil {
			return a, err
		}
	}
	fresh := folderIsNew(cfg.DataDir)
	if err := a.openStore(ctx); err != nil {
		return a, err
	}
	if cfg.ClientID == "" && cfg.Broker != "" {
		if cfg.ClientID, err = folderClientID(cfg.DataDir, fresh); err != nil {
			return a, err
		}
	}

	if err := a.connectMQTT(ctx); err != nil {
		return a, err
	}

	a.devs = devices.NewCatalog(devices.Options{Z2MBase: cfg.Z2MBase, HAPrefix: cfg.HAPrefix, Notify: cfg.Notify, Areas: cfg.Areas,
		Logger: log.With("part", "devices"), IDs: deviceIDs{a.store}, MaxPayload: cfg.MaxMessageBytes})
	if a.door != nil {
		a.door.catalog.Store(a.devs)
	}
	if err := a.devs.Start(ctx, a.client); err != nil {
		return a, fmt.Errorf("starting device discovery: %w", err)
	}

	if err := a.startEngine(ctx); err != nil {
		return a, err
	}

	if cfg.Demo {
		if err := a.startDemo(ctx); err != nil {
			return a, err
		}
	}

	a.mcp = mcpserver.New(a.eng, mcpserver.Options{Default: cfg.stdioPrincipal(), Logger: quietBelow(log, cfg.LogLevel, slog.LevelWarn).With("part", "mcp"), ApprovalPages: withHTTP})
	if withHTTP {
		if err := a.serveHTTP(); err != nil {
			return a, err
		}
	}
	return a, nil
}

// openStore opens the data folder's database; a full disk is said as such.
func (a *app) openStore(ctx context.Context) (err error) {
	dir := a.cfg.DataDir
	if a.store, err = storage.Open(ctx, dir); err != nil {
		if note := freeSpaceNote(dir); note != "" {
			return fmt.Errorf("opening storage in %s: %w%s: SQLite needs room for its write-ahead files to open the database, "+
				"and without it no rule can be armed nor anything recorded, so the house does not start; free some space and start again", dir, err, note)
		}
		return fmt.Errorf("opening storage in %s: %w", dir, err)
	}
	a.stops = append(a.stops, func() { _ = a.store.Close() })
	return nil
}

// startDemo starts the simulated devices and waits for the catalog to
// hold them.
func (a *app) startDemo(ctx context.Context) error {
	cfg := a.cfg
	a.sim = demo.New(a.client, demo.Options{Base: cfg.Z2MBase, HAPrefix: cfg.HAPrefix, Pace: cfg.DemoPace,
		NotifyTopic: "pilothouse/notify/phone", Logger: a.log.With("part", "demo")})
	if err := a.sim.Start(ctx); err != nil {
		return fmt.Errorf("starting the demo devices: %w", err)
	}
	a.stops = append(a.stops, a.sim.Close)
	// Announcements reach the catalog asynchronously: serve once the demo
	// house is in it, so a client's first lookup sees it.
	if !waitCatalog(ctx, a.devs, a.sim.Devices(), 5*time.Second) {
		a.log.Warn("demo devices not all in the catalog yet; serving anyway")
	}
	return nil
}

// connectMQTT starts the embedded broker and its Inline client, or dials
// the external broker.
func (a *app) connectMQTT(ctx context.Context) error {
	cfg, log := a.cfg, a.log
	if cfg.Broker == "" {
		var err error
		if a.broker, err = mqtt.StartBroker(cfg.BrokerListen, quietBelow(log, cfg.LogLevel, slog.LevelError).With("part", "broker"),
			mqtt.WithBrokerUsers(cfg.BrokerUsers), mqtt.WithAuthLogger(log.With("part", "broker")),
			mqtt.WithMaxPacketBytes(cfg.MaxMessageBytes), mqtt.WithMaxRetainedBytes(cfg.BrokerMaxRetained)); err != nil {
			return fmt.Errorf("starting the embedded MQTT broker on %s (use --broker-listen to move it, or --broker to use an existing broker): %w", cfg.BrokerListen, err)
		}
		a.stops = append(a.stops, func() { _ = a.broker.Close() })
		log.Info("embedded MQTT broker listening", "addr", a.broker.Addr(), "users", len(cfg.BrokerUsers))
		// The embedded broker's own client: no TCP connection in between.
		a.client = a.broker.Inline(log.With("part", "mqtt"))
	} else {
		c, err := mqtt.Dial(ctx, mqtt.Options{Broker: cfg.Broker, ClientID: cfg.ClientID, FreshStart: true, Username: cfg.MQTTUser,
			Password: cfg.MQTTPassword, TLS: cfg.tlsConfig(), Logger: log.With("part", "mqtt"), ConnectRetry: true,
			PublishTimeout: cfg.publishTimeout, MaxMessageBytes: cfg.MaxMessageBytes})
		if err != nil {
			return fmt.Errorf("connecting to MQTT broker %s: %w", cfg.Broker, err)
		}
		a.client = c
	}
	a.stops = append(a.stops, a.client.Close)
	return nil
}

// startEngine starts the engine, and records the broker connection's
// losses and returns in its logbook.
func (a *app) startEngine(ctx context.Context) error {
	a.eng = engine.New(a.cfg.engineConfig(), a.devs, a.store, a.log.With("part", "engine"))
	hm := helpers.New(helpers.Options{Catalog: a.devs, Store: a.store, Log: a.log.With("part", "helpers"), Note: a.eng.HelperNote})
	a.eng.SetHelpers(hm)
	a.helpers = hm
	if err := a.eng.Start(ctx); err != nil {
		return fmt.Errorf("starting the engine: %w", err)
	}
	a.stops = append(a.stops, a.eng.Close)
	// After the rules are armed: a timer that ended while the server was
	// down finishes now, and the rules on its end see it.
	start := hm.Start
	if a.cfg.Demo {
		start = func(ctx context.Context, config []helpers.Def) error {
			return hm.StartWithDefaults(ctx, config, demo.Helpers())
		}
	}
	if err := start(ctx, a.cfg.Helpers); err != nil {
		return fmt.Errorf("starting the helpers: %w", err)
	}
	a.stops = append(a.stops, hm.Close)
	a.logBroker()
	return nil
}

// waitCatalog polls until every named device is in the catalog, or d passes.
func waitCatalog(ctx context.Context, devs *devices.Catalog, names []string, d time.Duration) bool {
	return waitUntil(ctx, d, func() bool {
		snap := devs.Snapshot()
		for _, n := range names {
			if _, ok := snap.Get(n); !ok {
				return false
			}
		}
		return true
	}) == nil
}

// mqttConn is the server's MQTT connection: a Client of an external
// broker, or the embedded broker's Inline client.
type mqttConn interface {
	mqtt.PubSub
	Connected() bool
	// Health says whether the broker is connected and answering, else why.
	Health() (ok bool, reason string)
	// Delivery says how deliveries to the handlers went (backpressure).
	Delivery() mqtt.Delivery
	Close()
}

// listen opens the HTTP port before anything else starts: the front door
// answers "starting" until serveHTTP opens it to the house. Connections
// are bounded (the guard closes the longest-waiting idle or silent one
// past limits.max_connections); a client gets 10 s to send its headers
// (64 KB of them) and 10 s more for a body (guard.Bodies: a read deadline
// only while a body arrives, so GET event streams are not cut), and may
// keep an idle connection for a minute. A response whose client takes
// nothing of it for 30 s is cut (guard.Writes: a deadline from each write,
// so streams that keep writing and long runs are not).
func (a *app) listen() error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s (use --addr to move it): %w", a.cfg.Addr, err)
	}
	a.ln = ln
	// One allowed-host policy and body bound for /mcp and the web UI
	// (/healthz stays open: the container's health check).
	gopts := mcpserver.LimitOptions(a.cfg.Limits)
	gopts.AllowedHosts, gopts.Logger = a.cfg.AllowedHosts, a.log.With("part", "http")
	gopts.BodyTimeout, gopts.WriteTimeout = a.cfg.bodyTimeout, a.cfg.writeTimeout
	a.guard = mcpserver.NewGuard(gopts)
	a.door = &frontDoor{instance: a.instance}
	a.http = &http.Server{Handler: a.guard.Writes(a.guard.Bodies(a.door)), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		MaxHeaderBytes: 64 << 10, ConnState: a.guard.ConnState, ConnContext: a.guard.ConnContext}
	go func() {
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server stopped", "err", err)
		}
	}()
	a.stops = append(a.stops, a.stopHTTP)
	return nil
}

// stopHTTP shuts the HTTP server down within a second; a second call
// does nothing.
func (a *app) stopHTTP() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.http.Shutdown(ctx); err != nil {
		_ = a.http.Close()
	}
}

// serveHTTP opens the front door to MCP, the house API, /healthz and the
// web UI.
func (a *app) serveHTTP() error {
	mux := http.NewServeMux()
	principals := a.mcpPrincipals()
	mux.Handle("/mcp", a.mcp.HTTPHandler(mcpserver.HTTPOptions{Path: "/mcp", Principals: principals,
		AllowedOrigins: a.cfg.AllowedOrigins, Guard: a.guard}))
	a.routeAPI(mux, principals)
	mux.HandleFunc("/healthz", a.healthz)
	webUI := web.Handler(a.eng, web.Options{Principals: a.cfg.Principals, Logger: a.log.With("part", "web"), Guard: a.guard,
		Health: a.webHealth, Load: func() []string { return a.load().Warnings }, Sim: webSim{a},
		Counters: func() any { return a.healthDoc() }})
	mux.Handle("/", webUI)
	// The approvals API belongs to the web UI (it authenticates approvers
	// as the web UI does), beside the house API's other /api/ routes.
	mux.Handle("/api/approvals", webUI)
	mux.Handle("/api/approvals/", webUI)
	// Stopped first, before the parts it asks.
	a.stops = append(a.stops, a.stopHTTP)
	a.door.open(mux)
	a.log.Info("serving", "mcp", "http://"+a.ln.Addr().String()+"/mcp", "web", "http://"+a.ln.Addr().String()+"/")
	return nil
}

// URL is the base URL of the HTTP listener.
func (a *app) URL() string { return "http://" + a.ln.Addr().String() }

// stop stops every part in reverse start order, each bounded.
func (a *app) stop() {
	for i := len(a.stops) - 1; i >= 0; i-- {
		a.stops[i]()
	}
	a.stops = nil
}

// quietBelow keeps a chatty component (the embedded broker logs every hook
// and every closed connection, mcp-go every request) at min and above
// unless the server runs at debug level.
func quietBelow(log *slog.Logger, level string, min slog.Level) *slog.Logger {
	if level == "debug" {
		return log
	}
	return slog.New(levelFilter{log.Handler(), min})
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(a), f.min}
}

func (f levelFilter) WithGroup(g string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(g), f.min}
}

// newLogger writes the log to w, its times in zone: the house's, so that a
// line reads like the times the web UI shows (a new user saw UTC lines
// beside a Berlin UI).
func newLogger(w io.Writer, level string, json bool, zone *time.Location) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
			a.Value = slog.TimeValue(a.Value.Time().In(zone))
		}
		return a
	}}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
