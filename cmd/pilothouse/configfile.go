package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/zones"
	"github.com/pilothouse/pilothouse/rules"
)

// ConfigError is a problem in a configuration file, at a key's location.
type ConfigError struct {
	File         string
	Line, Column int
	Key          string // dotted path, e.g. mqtt.broker or principals[1].token
	Msg          string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("config %s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("config %s:%d:%d: %s: %s", e.File, e.Line, e.Column, e.Key, e.Msg)
}

// loadConfigFile applies a YAML configuration file onto c, which already
// holds the defaults; keys absent from the file keep them. Environment
// variables and flags are applied after it. Unknown keys, wrong types and
// bad values fail with the key's file:line:column.
func loadConfigFile(file string, c *Config) error {
	return loadConfigFileWarn(file, c, os.Stderr)
}

// configFileArg finds the configuration file for a command line: the value
// of --config / -config (as "--config FILE" or "--config=FILE"), else the
// environment variable PILOTHOUSE_CONFIG, else "". The integrator calls it
// before registering the other flags, so that the file provides their
// defaults and environment variables and flags still win.
func configFileArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if hasVal {
			return val
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv(envPrefix + "CONFIG")
}

// loadConfigFileWarn is loadConfigFile with warnings written to warn.
func loadConfigFileWarn(file string, c *Config, warn io.Writer) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c.ConfigFile = file
	return parseConfigYAML(file, b, c, warn)
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

func parseConfigYAML(file string, b []byte, c *Config, warn io.Writer) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("config %s:%s: %s", file, m[1], m[2])
		}
		return fmt.Errorf("config %s: %s", file, msg)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // an empty file changes nothing
	}
	l := &cfgLoader{file: file, c: c, warn: warn}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	return l.top(root)
}

type cfgLoader struct {
	file string
	c    *Config
	warn io.Writer
}

func (l *cfgLoader) errAt(n *yaml.Node, key, format string, a ...any) error {
	return &ConfigError{File: l.file, Line: n.Line, Column: n.Column, Key: key, Msg: fmt.Sprintf(format, a...)}
}

// handler decodes the value of one key.
type handler func(n *yaml.Node, key string) error

// mapping walks a mapping node, dispatching each key to its handler; an
// unknown or repeated key is an error at the key.
func (l *cfgLoader) mapping(n *yaml.Node, key string, fields map[string]handler) error {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return l.errAt(n, key, "want a mapping of keys, got %s", describe(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		full := k.Value
		if key != "" {
			full = key + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode {
			return l.errAt(k, key, "keys must be plain names")
		}
		h, ok := fields[k.Value]
		if !ok {
			return l.errAt(k, full, "unknown key%s", suggest(k.Value, fields))
		}
		if seen[k.Value] {
			return l.errAt(k, full, "key repeated")
		}
		seen[k.Value] = true
		if err := h(deref(v), full); err != nil {
			return err
		}
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("string %q", n.Value)
		case "!!null":
			return "nothing (null)"
		case "!!bool":
			return "boolean " + n.Value
		case "!!int", "!!float":
			return "number " + n.Value
		}
		return n.Value
	}
	return "something else"
}

// suggest names the closest known key, if any is close.
func suggest(got string, fields map[string]handler) string {
	best, bestD := "", 3
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if d := editDistance(got, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return " (did you mean " + best + "?)"
	}
	return " (known keys: " + strings.Join(keys, ", ") + ")"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Scalars.

func (l *cfgLoader) str(dst *string) handler {
	return func(n *yaml.Node, key string) error {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return l.errAt(n, key, "want a string, got %s", describe(n))
		}
		*dst = n.Value
		return nil
	}
}

func (l *cfgLoader) boolean(dst *bool) handler {
	return func(n *yaml.Node, key string) error {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return l.errAt(n, key, "want true or false, got %s", describe(n))
		}
		return n.Decode(dst)
	}
}

func (l *cfgLoader) integer(dst *int) handler {
	return func(n *yaml.Node, key string) error {
		var v int
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
			return l.errAt(n, key, "want an integer, got %s", describe(n))
		}
		if v <= 0 {
			return l.errAt(n, key, "must be positive, got %d", v)
		}
		*dst = v
		return nil
	}
}

func (l *cfgLoader) uinteger(dst *uint) handler {
	return func(n *yaml.Node, key string) error {
		var v int
		if err := l.integer(&v)(n, key); err != nil {
			return err
		}
		*dst = uint(v)
		return nil
	}
}

// duration accepts Go durations ("20s", "1h30m") and ISO 8601 ("PT20S").
func (l *cfgLoader) duration(dst *time.Duration) handler {
	return func(n *yaml.Node, key string) error {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return l.errAt(n, key, "want a duration such as \"20s\" or \"PT20S\", got %s", describe(n))
		}
		d, err := rules.ParseDuration(n.Value)
		if err != nil || d <= 0 {
			return l.errAt(n, key, "want a positive duration such as \"20s\" or \"PT20S\", got %q", n.Value)
		}
		*dst = d
		return nil
	}
}

func (l *cfgLoader) float(dst **float64, lo, hi float64) handler {
	return func(n *yaml.Node, key string) error {
		var v float64
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
			return l.errAt(n, key, "want a number, got %s", describe(n))
		}
		if v < lo || v > hi {
			return l.errAt(n, key, "must be between %g and %g, got %g", lo, hi, v)
		}
		*dst = &v
		return nil
	}
}

// strList accepts a list of strings; check, if set, vets each item.
func (l *cfgLoader) strList(dst *[]string, check func(string) error) handler {
	return func(n *yaml.Node, key string) error {
		if n.Kind != yaml.SequenceNode {
			return l.errAt(n, key, "want a list of strings, got %s", describe(n))
		}
		out := []string{}
		for i, it := range n.Content {
			it = deref(it)
			k := fmt.Sprintf("%s[%d]", key, i)
			if it.Kind != yaml.ScalarNode || it.Tag != "!!str" {
				return l.errAt(it, k, "want a string, got %s", describe(it))
			}
			if check != nil {
				if err := check(it.Value); err != nil {
					return l.errAt(it, k, "%s", err.Error())
				}
			}
			out = append(out, it.Value)
		}
		*dst = out
		return nil
	}
}

// fromEnv reads a secret from the environment variable a *_env key names.
func (l *cfgLoader) fromEnv(dst *string) handler {
	return func(n *yaml.Node, key string) error {
		var name string
		if err := l.str(&name)(n, key); err != nil {
			return err
		}
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return l.errAt(n, key, "environment variable %s is not set", name)
		}
		*dst = v
		return nil
	}
}

// check wraps a handler with a value check on the decoded string.
func (l *cfgLoader) checked(dst *string, check func(string) error) handler {
	return func(n *yaml.Node, key string) error {
		var s string
		if err := l.str(&s)(n, key); err != nil {
			return err
		}
		if err := check(s); err != nil {
			return l.errAt(n, key, "%s", err.Error())
		}
		*dst = s
		return nil
	}
}

func checkHostPort(s string) error {
	if _, _, err := net.SplitHostPort(s); err != nil {
		return fmt.Errorf("want host:port such as \"127.0.0.1:8080\", got %q", s)
	}
	return nil
}

func checkBrokerURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("want a broker URL such as \"tcp://mosquitto:1883\", got %q", s)
	}
	switch u.Scheme {
	case "tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss":
		return nil
	}
	return fmt.Errorf("unsupported scheme %q (tcp, ssl, ws, wss)", u.Scheme)
}

func nonEmpty(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("must not be empty")
	}
	return nil
}

// Top level.

func (l *cfgLoader) top(root *yaml.Node) error {
	c := l.c
	var lat, lon *float64
	var locNode *yaml.Node
	err := l.mapping(root, "", map[string]handler{
		"listen":          l.checked(&c.Addr, checkHostPort),
		"allowed_origins": l.strList(&c.AllowedOrigins, checkOrigin),
		"allowed_hosts":   l.strList(&c.AllowedHosts, checkHostName),
		"data_dir":        l.checked(&c.DataDir, nonEmpty),
		"mqtt":            l.mqtt,
		"zigbee2mqtt":     l.single("base_topic", &c.Z2MBase),
		"homeassistant":   l.single("discovery_prefix", &c.HAPrefix),
		"demo": func(n *yaml.Node, key string) error {
			return l.mapping(n, key, map[string]handler{"enabled": l.boolean(&c.Demo), "pace": l.duration(&c.DemoPace)})
		},
		"location": func(n *yaml.Node, key string) error {
			locNode = n
			return l.mapping(n, key, map[string]handler{"latitude": l.float(&lat, -90, 90), "longitude": l.float(&lon, -180, 180)})
		},
		"time_zone": l.checked(&c.TimeZone, zones.Check),
		"retention": l.checked(&c.Retention, func(s string) error {
			if d, err := rules.ParseDuration(s); err != nil || d <= 0 {
				return fmt.Errorf("want an ISO 8601 duration such as \"P30D\", got %q", s)
			}
			return nil
		}),
		"log": func(n *yaml.Node, key string) error {
			return l.mapping(n, key, map[string]handler{"level": l.checked(&c.LogLevel, checkLevel), "json": l.boolean(&c.LogJSON)})
		},
		"areas":                 l.areas,
		"principals":            l.principals,
		"stdio_principal":       l.checked(&c.StdioAs, nonEmpty),
		"stdio_request_timeout": l.duration(&c.StdioTimeout),
		"notify":                l.notify,
		"helpers":               l.helpers,
		"limits":                l.limits, "history": l.history,
		"approvals": l.approvals,
	})
	if err != nil {
		return err
	}
	if locNode != nil {
		if (lat == nil) != (lon == nil) {
			return l.errAt(locNode, "location", "set both latitude and longitude")
		}
		c.Latitude, c.Longitude = lat, lon
	}
	if c.StdioAs != "owner" && len(c.Principals) > 0 {
		found := false
		for _, p := range c.Principals {
			found = found || p.Name == c.StdioAs
		}
		if !found {
			n := findKey(root, "stdio_principal")
			return l.errAt(n, "stdio_principal", "no principal named %q", c.StdioAs)
		}
	}
	return nil
}

// single decodes a mapping of one non-empty string key.
func (l *cfgLoader) single(field string, dst *string) handler {
	return func(n *yaml.Node, key string) error {
		return l.mapping(n, key, map[string]handler{field: l.checked(dst, nonEmpty)})
	}
}

// findKey returns the value node of a top-level key (or root).
func findKey(root *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == key {
			return root.Content[i+1]
		}
	}
	return root
}

// checkHostName accepts a DNS name as a browser sends it in Host (no
// scheme, port or path): "pilothouse.lan", "home.example.com".
func checkHostName(s string) error {
	if !hostNameRE.MatchString(s) || len(s) > 253 {
		return fmt.Errorf("want a host name such as \"pilothouse.lan\" (no scheme, port or path), got %q", s)
	}
	return nil
}

var hostNameRE = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

func checkOrigin(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("want an origin such as \"https://home.example.com\", got %q", s)
	}
	return nil
}

func checkLevel(s string) error {
	switch s {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("want debug, info, warn or error, got %q", s)
}

func (l *cfgLoader) mqtt(n *yaml.Node, key string) error {
	c := l.c
	var pw, pwEnv string
	var hasPw, hasPwEnv bool
	err := l.mapping(n, key, map[string]handler{
		"broker":                      l.checked(&c.Broker, checkBrokerURL),
		"embedded_listen":             l.checked(&c.BrokerListen, checkHostPort),
		"embedded_users":              l.brokerUsers,
		"max_message_bytes":           l.integer(&c.MaxMessageBytes),
		"embedded_max_retained_bytes": l.integer(&c.BrokerMaxRetained),
		"client_id":                   l.checked(&c.ClientID, nonEmpty),
		"username":                    l.str(&c.MQTTUser),
		"password": func(n *yaml.Node, key string) error {
			hasPw = true
			return l.str(&pw)(n, key)
		},
		"password_env": func(n *yaml.Node, key string) error {
			hasPwEnv = true
			return l.fromEnv(&pwEnv)(n, key)
		},
		"ca_file": l.checked(&c.MQTTCAFile, func(s string) error {
			if _, err := os.Stat(s); err != nil {
				return fmt.Errorf("cannot read %q: %v", s, errors.Unwrap(err))
			}
			return nil
		}),
		"insecure_skip_verify": l.boolean(&c.MQTTInsecure),
	})
	if err != nil {
		return err
	}
	switch {
	case hasPw && hasPwEnv:
		return l.errAt(n, key, "set password or password_env, not both")
	case hasPw:
		c.MQTTPassword = pw
	case hasPwEnv:
		c.MQTTPassword = pwEnv
	}
	return nil
}
