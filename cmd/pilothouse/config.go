package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/zones"
	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/rules"
)

// Config is the whole configuration. Defaults run with zero setup: an
// embedded broker, demo devices, SQLite in the per-user data folder
// (resolveDataDir), MCP and the web UI on 127.0.0.1:8080.
type Config struct {
	ConfigFile     string // the --config file read ("" = none)
	Addr           string
	AllowedOrigins []string
	AllowedHosts   []string
	DataDir        string // "" = the per-user default (resolveDataDir)

	Broker       string // "" = embedded
	BrokerListen string
	BrokerUsers  []mqtt.BrokerUser // of the embedded broker
	// MaxMessageBytes bounds an MQTT message: the embedded broker's
	// packets and what the catalog reads (mqtt.max_message_bytes);
	// BrokerMaxRetained the embedded broker's retained payload bytes.
	MaxMessageBytes   int
	BrokerMaxRetained int
	ClientID          string
	MQTTUser          string
	MQTTPassword      string
	MQTTCAFile        string
	MQTTInsecure      bool

	Z2MBase  string
	HAPrefix string

	Demo     bool
	DemoPace time.Duration

	Latitude, Longitude *float64
	TimeZone            string
	Retention           string
	History             historyConfig
	LogLevel            string
	LogJSON             bool

	Areas      []devices.AreaRule // device areas by name pattern (area:<x> tags)
	Notify     []devices.NotifyChannel
	Helpers    []helpers.Def // the configuration file's helpers
	Principals []*engine.Principal
	StdioAs    string
	// StdioTimeout is how long pilothouse stdio waits for the serve that
	// runs the house: to announce itself, and for its next message about
	// each request it relays.
	StdioTimeout time.Duration
	Limits       rules.Limits
	// ApprovalTTL, WebURL and Approval: the risk gate's settings
	// (approvals).
	ApprovalTTL time.Duration
	WebURL      string
	Approval    engine.ApprovalPolicy

	tls            *tls.Config
	publishTimeout time.Duration // mqtt.Options.PublishTimeout; 0 = its default (tests shorten it)
	bodyTimeout    time.Duration // mcpserver.GuardOptions.BodyTimeout; 0 = its default (tests shorten it)
	writeTimeout   time.Duration // mcpserver.GuardOptions.WriteTimeout; 0 = its default (tests shorten it)
}

func defaultConfig() *Config {
	return &Config{
		Addr: "127.0.0.1:8080", BrokerListen: "127.0.0.1:1883",
		MaxMessageBytes: mqtt.DefaultMaxPacketBytes, BrokerMaxRetained: mqtt.DefaultMaxRetainedBytes,
		Z2MBase: "zigbee2mqtt", HAPrefix: "homeassistant", Demo: true, DemoPace: 20 * time.Second,
		Retention: "P30D", LogLevel: "info", StdioAs: "owner", StdioTimeout: defaultStdioTimeout, Limits: rules.DefaultLimits,
	}
}

// defaultStdioTimeout answers a stdio client before the usual 60 s
// request timeout of MCP clients, so it reads why.
const defaultStdioTimeout = 50 * time.Second

// envPrefix is the prefix of environment variables that override flags'
// defaults: --data → PILOTHOUSE_DATA, --broker-listen → PILOTHOUSE_BROKER_LISTEN.
const envPrefix = "PILOTHOUSE_"

// parseFlags reads flags; environment variables provide the defaults.
func parseFlags(name string, args []string) (*Config, error) {
	c := defaultConfig()
	configFile := configFileArg(args)
	if configFile != "" {
		if err := loadConfigFileWarn(configFile, c, os.Stderr); err != nil {
			return nil, err
		}
	}
	fs := commandFlags(name) // sim registers only the flags it uses
	fs.StringVar(&configFile, "config", configFile, "YAML configuration file (see docs/configuration.md); flags and PILOTHOUSE_* variables override it")
	v := newFlagVars(c)
	v.register(fs, c)
	if err := applyEnv(fs.FlagSet); err != nil {
		return nil, err
	}
	fs.Usage = func() { flagUsage(fs.FlagSet, name) }
	if err := parseFlagSet(fs.FlagSet, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := v.apply(c); err != nil {
		return nil, err
	}
	return c, nil
}

// flagVars are the flags parsed as text and applied to the Config after
// parsing.
type flagVars struct {
	lat, lon, notifyTopic, token, origins, hosts, defaultNotify string
}

func newFlagVars(c *Config) *flagVars {
	// --lat and --lon default to "": the configuration file's location
	// stays unless they are given.
	v := &flagVars{origins: strings.Join(c.AllowedOrigins, ","), hosts: strings.Join(c.AllowedHosts, ",")}
	if len(c.Notify) == 0 {
		v.defaultNotify = "pilothouse/notify/phone"
	}
	return v
}

// register is the flag table.
func (v *flagVars) register(fs *cmdFlags, c *Config) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "HTTP listen address for MCP (/mcp), the web UI (/) and /healthz")
	fs.StringVar(&v.origins, "allowed-origins", v.origins, "comma-separated extra browser origins allowed to call the server")
	fs.StringVar(&v.hosts, "allowed-hosts", v.hosts, "comma-separated host names the server answers to besides loopback names and IP addresses (DNS rebinding protection)")
	fs.StringVar(&c.DataDir, "data", c.DataDir, "data folder (SQLite database; default: $XDG_DATA_HOME/pilothouse, else ~/.local/share/pilothouse, or ./pilothouse-data when the working directory has one)")
	fs.StringVar(&c.Broker, "broker", c.Broker, "external MQTT broker URL (tcp://host:1883, ssl://host:8883); empty = embedded broker")
	fs.StringVar(&c.BrokerListen, "broker-listen", c.BrokerListen, "listen address of the embedded broker")
	fs.StringVar(&c.ClientID, "mqtt-client-id", c.ClientID, "MQTT client id (default: the data folder's own, kept in its mqtt-client-id file)")
	fs.StringVar(&c.MQTTUser, "mqtt-user", c.MQTTUser, "MQTT username")
	fs.StringVar(&c.MQTTPassword, "mqtt-password", c.MQTTPassword, "MQTT password")
	fs.StringVar(&c.MQTTCAFile, "mqtt-ca", c.MQTTCAFile, "CA certificate file for ssl:// brokers")
	fs.BoolVar(&c.MQTTInsecure, "mqtt-insecure", c.MQTTInsecure, "skip TLS certificate verification (testing only)")
	fs.StringVar(&c.Z2MBase, "z2m-base", c.Z2MBase, "Zigbee2MQTT base topic")
	fs.StringVar(&c.HAPrefix, "ha-prefix", c.HAPrefix, "Home Assistant MQTT discovery prefix")
	fs.BoolVar(&c.Demo, "demo", c.Demo, "run the demo device simulator")
	fs.DurationVar(&c.DemoPace, "demo-pace", c.DemoPace, "mean time between spontaneous demo sensor changes")
	fs.StringVar(&v.lat, "lat", "", "latitude for sunrise/sunset triggers and conditions (default with --demo: the demo house's example location, Greenwich)")
	fs.StringVar(&v.lon, "lon", "", "longitude for sunrise/sunset triggers")
	fs.StringVar(&c.TimeZone, "tz", c.TimeZone, "IANA time zone for schedules (default: the system's)")
	fs.StringVar(&c.Retention, "retention", c.Retention, "how long run records are kept (ISO 8601 duration, e.g. P30D)")
	fs.StringVar(&v.notifyTopic, "notify-topic", v.defaultNotify, "MQTT topic of the notify.phone channel (empty = none; default when the config file declares no notify channels)")
	fs.DurationVar(&c.StdioTimeout, "stdio-request-timeout", c.StdioTimeout, "stdio: how long to wait for the serve running the house to announce itself, and for its answer to each request (0 = no bound)")
	fs.StringVar(&v.token, "token", "", "bearer token of the owner principal (required when --addr is not loopback)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.BoolVar(&c.LogJSON, "log-json", c.LogJSON, "log as JSON")
}

// flagEnv is the environment variable that overrides a flag's default.
func flagEnv(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag its environment variable names: environment
// overrides defaults; explicit flags, parsed after, win.
func applyEnv(fs *flag.FlagSet) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		key := flagEnv(f.Name)
		if v, ok := os.LookupEnv(key); ok {
			if err := f.Value.Set(v); err != nil && envErr == nil {
				envErr = envError(key, v, f)
			}
		}
	})
	return envErr
}

func flagUsage(fs *flag.FlagSet, name string) {
	out := fs.Output()
	fmt.Fprintf(out, "Usage of pilothouse %s (each flag also reads PILOTHOUSE_<FLAG>, e.g. --mqtt-user = PILOTHOUSE_MQTT_USER):\n", name)
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(out, "  --%s (%s)\n    \t%s", f.Name, flagEnv(f.Name), f.Usage)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(out, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(out)
	})
}

// apply puts the text flags into c.
func (v *flagVars) apply(c *Config) error {
	c.AllowedOrigins, c.AllowedHosts = splitList(v.origins), splitList(v.hosts)
	for _, kv := range []struct {
		name string
		s    string
		dst  **float64
	}{{"lat", v.lat, &c.Latitude}, {"lon", v.lon, &c.Longitude}} {
		if kv.s == "" {
			continue
		}
		f, err := strconv.ParseFloat(kv.s, 64)
		if err != nil {
			return fmt.Errorf("--%s (or %s%s) %q: want a number of degrees such as 48.8566", kv.name, envPrefix, strings.ToUpper(kv.name), kv.s)
		}
		*kv.dst = &f
	}
	if v.notifyTopic != "" {
		c.Notify = setNotify(c.Notify, devices.NotifyChannel{ID: "notify.phone", Name: "Phone notification", Topic: v.notifyTopic})
	}
	if v.token != "" {
		if err := checkToken(v.token); err != nil {
			return fmt.Errorf("--token (or %sTOKEN): %w", envPrefix, err)
		}
		c.Principals = setPrincipal(c.Principals, &engine.Principal{Name: "owner", TokenHash: engine.HashToken(v.token), Deploy: true, Admin: true})
	}
	return nil
}

// A bearer token is the only secret between the network and the house:
// it must not be guessable. 32 characters is 128 bits as hex (openssl
// rand -hex 16); a repetition of a few characters is no secret however
// long. A token given only as its SHA-256 cannot be checked.
const (
	minTokenChars    = 32
	minTokenDistinct = 8
)

// checkToken refuses a token too weak to be a bearer secret (the message
// never repeats the token).
func checkToken(tok string) error {
	distinct := map[rune]bool{}
	for _, r := range tok {
		distinct[r] = true
	}
	if len(tok) < minTokenChars || len(distinct) < minTokenDistinct {
		return fmt.Errorf("a bearer token needs at least %d characters, %d of them different (this one has %d, %d different): "+
			"generate one with openssl rand -hex 24", minTokenChars, minTokenDistinct, len(tok), len(distinct))
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// setNotify adds or replaces the channel with ch's id.
func setNotify(list []devices.NotifyChannel, ch devices.NotifyChannel) []devices.NotifyChannel {
	for i, x := range list {
		if x.ID == ch.ID {
			list[i] = ch
			return list
		}
	}
	return append(list, ch)
}

// setPrincipal adds p, or replaces the token of the principal of that name
// (--token overrides the owner's token from the file).
func setPrincipal(list []*engine.Principal, p *engine.Principal) []*engine.Principal {
	for _, x := range list {
		if x.Name == p.Name {
			x.TokenHash = p.TokenHash
			return list
		}
	}
	return append(list, p)
}

// check validates the configuration as a whole.
func (c *Config) check(withHTTP bool) error {
	if _, err := rules.ParseDuration(c.Retention); err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	if (c.Latitude == nil) != (c.Longitude == nil) {
		return errors.New("location: set both --lat and --lon, or neither")
	}
	for _, h := range c.AllowedHosts {
		if err := checkHostName(h); err != nil {
			return fmt.Errorf("allowed hosts: %w", err)
		}
	}
	if need := c.Limits.MaxProgramBytes + c.Limits.MaxInputBytes; c.Limits.MaxRequestBytes < need {
		return fmt.Errorf("limits.max_request_bytes (%d) must be at least max_program_bytes + max_input_bytes (%d): a request could not carry the largest program and input", c.Limits.MaxRequestBytes, need)
	}
	if l := c.Limits; l.MaxStoredTestBytes < l.MaxRunBytes {
		return fmt.Errorf("limits.max_stored_test_bytes (%d) must be at least max_run_bytes (%d): no test run could be stored", l.MaxStoredTestBytes, l.MaxRunBytes)
	}
	if l := c.Limits; l.MaxServedRunBytes < l.MaxRunBytes {
		return fmt.Errorf("limits.max_served_run_bytes (%d) must be at least max_run_bytes (%d): the largest run could not be read", l.MaxServedRunBytes, l.MaxRunBytes)
	}
	if c.TimeZone != "" {
		if _, err := zones.Load(c.TimeZone); err != nil {
			return fmt.Errorf("--tz: %w", err)
		}
	}
	if withHTTP && len(c.Principals) == 0 {
		host, _, err := net.SplitHostPort(c.Addr)
		if err != nil {
			return fmt.Errorf("addr %q: %w", c.Addr, err)
		}
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("refusing to serve %s without authentication: configure principals (or --token) to listen beyond loopback", c.Addr)
		}
	}
	if err := c.checkBrokerListen(); err != nil {
		return err
	}
	if c.MaxMessageBytes > maxMQTTPacket {
		return fmt.Errorf("mqtt.max_message_bytes %d is over MQTT's largest packet (%d)", c.MaxMessageBytes, maxMQTTPacket)
	}
	if c.MQTTCAFile != "" || c.MQTTInsecure {
		tc := &tls.Config{InsecureSkipVerify: c.MQTTInsecure} //nolint:gosec // opt-in for testing
		if c.MQTTCAFile != "" {
			pem, err := os.ReadFile(c.MQTTCAFile)
			if err != nil {
				return fmt.Errorf("mqtt ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("mqtt ca %s: no PEM certificate found", c.MQTTCAFile)
			}
			tc.RootCAs = pool
		}
		c.tls = tc
	}
	return nil
}

func (c *Config) tlsConfig() *tls.Config { return c.tls }

// zone is the house's time zone: the configured one, else the system's.
func (c *Config) zone() *time.Location {
	if c.TimeZone != "" {
		if z, err := time.LoadLocation(c.TimeZone); err == nil {
			return z
		}
	}
	return zones.System()
}

func (c *Config) engineConfig() engine.Config {
	ret, _ := rules.ParseDuration(c.Retention)
	ec := engine.Config{Retention: ret, Limits: c.Limits, Principals: c.Principals}
	switch {
	case c.Latitude != nil:
		ec.Location = &engine.Location{Latitude: *c.Latitude, Longitude: *c.Longitude}
		ec.LocationSource = engine.LocationConfigured
	case c.Demo:
		// The demo house declares an example location so that sun
		// triggers work out of the box; discover says it is one.
		loc := engine.DemoLocation
		ec.Location, ec.LocationSource = &loc, engine.LocationDemo
	}
	ec.TimeZone = c.zone()
	ec.History = c.History.engine()
	ec.ApprovalTTL, ec.WebURL, ec.Approval = c.ApprovalTTL, c.webURL(), c.Approval
	return ec
}

// stdioPrincipal is who requests without a token run as.
func (c *Config) stdioPrincipal() *engine.Principal {
	for _, p := range c.Principals {
		if p.Name == c.StdioAs {
			return p
		}
	}
	return engine.Owner
}
