package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

func loadYAML(t *testing.T, body string) (*Config, string, error) {
	t.Helper()
	c := defaultConfig()
	var warn bytes.Buffer
	err := parseConfigYAML("pilothouse.yaml", []byte(body), c, &warn)
	return c, warn.String(), err
}

func TestConfigFileGood(t *testing.T) {
	t.Setenv("PH_TEST_MQTT_PW", "mqtt-secret")
	t.Setenv("PH_TEST_TOKEN", "kid-token-0123456789abcdef01234567")
	c, warn, err := loadYAML(t, `
listen: 0.0.0.0:8080
allowed_origins: [https://home.example.com]
allowed_hosts: [pilothouse.lan, Home.Example.com]
data_dir: /data
mqtt:
  broker: tcp://mosquitto:1883
  embedded_listen: 127.0.0.1:1884
  client_id: ph
  username: pilothouse
  password_env: PH_TEST_MQTT_PW
zigbee2mqtt: {base_topic: z2m}
homeassistant: {discovery_prefix: ha}
demo: {enabled: false, pace: 5s}
location: {latitude: 48.85, longitude: 2.35}
time_zone: Europe/Paris
retention: P7D
log: {level: debug, json: true}
principals:
  - name: owner
    token: owner-token-0123456789abcdef0123
    deploy: true
  - name: kid
    token_env: PH_TEST_TOKEN
    scope:
      areas: [bedroom]
      allow_no_area: true
      devices: ["bedroom_*"]
      deny_devices: [front_lock]
      kinds: [device, state, action]
      deny_types: [lock, cover]
      deny_risks: [security, external]
  - name: ci
    token_sha256: `+engine.HashToken("ci")+`
    admin: true
stdio_principal: kid
stdio_request_timeout: 20s
notify:
  - {id: notify.phone, name: Phone, topic: pilothouse/notify/phone}
  - {id: notify.hook, url: "https://example.com/hook"}
limits:
  max_steps: 500
  max_iterations: 50
  max_wall: 1h
  max_call_depth: 2
  max_program_bytes: 65536
  validate_wall: PT1S
  memory_budget: 4096
  max_request_bytes: 2097152
  max_arg_bytes: 512
  max_input_bytes: 8192
`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn, "config pilothouse.yaml:20:5: warning: principals[0].token is a plaintext secret; prefer token_sha256 ("+engine.HashToken("owner-token-0123456789abcdef0123")+") or token_env") {
		t.Errorf("plaintext token warning: %q", warn)
	}
	lat, lon := 48.85, 2.35
	want := defaultConfig()
	want.Addr, want.AllowedOrigins, want.DataDir = "0.0.0.0:8080", []string{"https://home.example.com"}, "/data"
	want.AllowedHosts = []string{"pilothouse.lan", "Home.Example.com"}
	want.Broker, want.BrokerListen, want.ClientID, want.MQTTUser, want.MQTTPassword = "tcp://mosquitto:1883", "127.0.0.1:1884", "ph", "pilothouse", "mqtt-secret"
	want.Z2MBase, want.HAPrefix, want.Demo, want.DemoPace = "z2m", "ha", false, 5*time.Second
	want.Latitude, want.Longitude, want.TimeZone, want.Retention = &lat, &lon, "Europe/Paris", "P7D"
	want.LogLevel, want.LogJSON, want.StdioAs, want.StdioTimeout = "debug", true, "kid", 20*time.Second
	want.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token-0123456789abcdef0123"), Deploy: true, Admin: true}, // the owner is an administrator by default
		{Name: "kid", TokenHash: engine.HashToken("kid-token-0123456789abcdef01234567"), Scope: engine.Scope{Areas: []string{"bedroom"}, AllowNoArea: true,
			Devices: []string{"bedroom_*"}, DenyDevices: []string{"front_lock"}, Kinds: []pilotage.Kind{"device", "state", "action"},
			DenyTypes: []string{"lock", "cover"}, DenyRisks: []pilotage.Risk{"security", "external"}}},
		{Name: "ci", TokenHash: engine.HashToken("ci"), Admin: true},
	}
	want.Notify = []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "pilothouse/notify/phone"}, {ID: "notify.hook", URL: "https://example.com/hook"}}
	want.Limits.MaxSteps, want.Limits.MaxIterations, want.Limits.MaxWall, want.Limits.MaxCallDepth = 500, 50, time.Hour, 2
	want.Limits.MaxProgramBytes, want.Limits.ValidateWall, want.Limits.MemoryBudget = 65536, time.Second, 4096
	want.Limits.MaxRequestBytes, want.Limits.MaxArgBytes, want.Limits.MaxInputBytes = 2<<20, 512, 8192
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("config:\n got %+v\nwant %+v", c, want)
	}
	if err := c.check(true); err != nil {
		t.Fatalf("check: %v", err)
	}
}

func TestConfigFileEmptyKeepsDefaults(t *testing.T) {
	for _, body := range []string{"", "# nothing\n", "---\n", "~\n"} {
		c, _, err := loadYAML(t, body)
		if err != nil || !reflect.DeepEqual(c, defaultConfig()) {
			t.Errorf("%q: err=%v, config changed", body, err)
		}
	}
}

func TestConfigFileBad(t *testing.T) {
	t.Setenv("PH_TEST_EMPTY", "")
	t.Setenv("PH_TEST_WEAK", "abcdef")
	for _, tc := range []struct{ name, body, want string }{
		{"typo nested", "mqtt:\n  broker: tcp://x:1883\n  brokr: tcp://y:1883\n", "config pilothouse.yaml:3:3: mqtt.brokr: unknown key (did you mean broker?)"},
		{"typo top", "listn: 1.2.3.4:80\n", "config pilothouse.yaml:1:1: listn: unknown key (did you mean listen?)"},
		{"helper bounds", "helpers:\n  - {id: vacation_mode, kind: flag}\n  - {id: target, kind: number}\n", "config pilothouse.yaml:3:5: helpers[1]: invalid: number helper: min and max are required"},
		{"helper id not ASCII", "helpers:\n  - {id: \u212aitchen, kind: flag}\n", "config pilothouse.yaml:2:5: helpers[0]: invalid: id \"\u212aitchen\": lowercase letters, digits and _ (starting with a letter, at most 64)"},
		{"helper twice", "helpers:\n  - {id: a, kind: flag}\n  - {id: a, kind: flag}\n", "config pilothouse.yaml:3:5: helpers[1].id: helper \"a\" is defined twice"},
		{"helper key", "helpers:\n  - {id: a, kind: flag, colour: red}\n", "config pilothouse.yaml:2:25: helpers[0].colour: unknown key (known keys: area, duration, id, initial, kind, max, max_length, min, mode, name, options, step, tags, unit)"},
		{"unknown far", "colour: blue\n", "config pilothouse.yaml:1:1: colour: unknown key (known keys: allowed_hosts, allowed_origins, approvals, areas, data_dir, demo, helpers, history, homeassistant, limits, listen, location, log, mqtt, notify, principals, retention, stdio_principal, stdio_request_timeout, time_zone, zigbee2mqtt)"},
		{"repeated", "listen: a:1\nlisten: b:2\n", "config pilothouse.yaml:2:1: listen: key repeated"},
		{"not a mapping", "- a\n- b\n", "config pilothouse.yaml:1:1: want a mapping of keys, got a list"},
		{"bool type", "demo:\n  enabled: yes please\n", `config pilothouse.yaml:2:12: demo.enabled: want true or false, got string "yes please"`},
		{"string type", "data_dir: 42\n", "config pilothouse.yaml:1:11: data_dir: want a string, got number 42"},
		{"listen value", "listen: 8080\n", "config pilothouse.yaml:1:9: listen: want a string, got number 8080"},
		{"listen hostport", "listen: localhost\n", `config pilothouse.yaml:1:9: listen: want host:port such as "127.0.0.1:8080", got "localhost"`},
		{"broker scheme", "mqtt: {broker: \"http://x:1\"}\n", `config pilothouse.yaml:1:16: mqtt.broker: unsupported scheme "http" (tcp, ssl, ws, wss)`},
		{"password twice", "mqtt:\n  password: a\n  password_env: HOME\n", "config pilothouse.yaml:2:3: mqtt: set password or password_env, not both"},
		{"env unset", "mqtt: {password_env: PH_TEST_NOT_SET_EVER}\n", "config pilothouse.yaml:1:22: mqtt.password_env: environment variable PH_TEST_NOT_SET_EVER is not set"},
		{"env empty", "mqtt: {password_env: PH_TEST_EMPTY}\n", "config pilothouse.yaml:1:22: mqtt.password_env: environment variable PH_TEST_EMPTY is not set"},
		{"pace", "demo: {pace: fast}\n", `config pilothouse.yaml:1:14: demo.pace: want a positive duration such as "20s" or "PT20S", got "fast"`},
		{"latitude range", "location: {latitude: 91, longitude: 0}\n", "config pilothouse.yaml:1:22: location.latitude: must be between -90 and 90, got 91"},
		{"location half", "location:\n  latitude: 10\n", "config pilothouse.yaml:2:3: location: set both latitude and longitude"},
		{"tz", "time_zone: Mars/Olympus\n", `config pilothouse.yaml:1:12: time_zone: unknown IANA time zone "Mars/Olympus"; names look like Europe/Paris or America/New_York`},
		{"retention", "retention: 30 days\n", `config pilothouse.yaml:1:12: retention: want an ISO 8601 duration such as "P30D", got "30 days"`},
		{"log level", "log: {level: loud}\n", `config pilothouse.yaml:1:14: log.level: want debug, info, warn or error, got "loud"`},
		{"origin", "allowed_origins: [home.example.com]\n", `config pilothouse.yaml:1:19: allowed_origins[0]: want an origin such as "https://home.example.com", got "home.example.com"`},
		{"host with port", "allowed_hosts: [pilothouse.lan:8080]\n", `config pilothouse.yaml:1:17: allowed_hosts[0]: want a host name such as "pilothouse.lan" (no scheme, port or path), got "pilothouse.lan:8080"`},
		{"host as URL", "allowed_hosts: [\"https://home.example.com\"]\n", `config pilothouse.yaml:1:17: allowed_hosts[0]: want a host name such as "pilothouse.lan" (no scheme, port or path), got "https://home.example.com"`},
		{"principals type", "principals: {name: x}\n", "config pilothouse.yaml:1:13: principals: want a list of principals, got a mapping"},
		{"principal no name", "principals:\n  - token: 0123456789abcdef0123456789abcdef\n", "config pilothouse.yaml:2:5: principals[0]: name is required"},
		{"weak token", "principals:\n  - {name: a, token: hunter2}\n", "config pilothouse.yaml:2:22: principals[0].token: a bearer token needs at least 32 characters, 8 of them different (this one has 7, 7 different): generate one with openssl rand -hex 24"},
		{"repetitive token", "principals:\n  - {name: a, token: " + strings.Repeat("ab", 20) + "}\n", "config pilothouse.yaml:2:22: principals[0].token: a bearer token needs at least 32 characters, 8 of them different (this one has 40, 2 different): generate one with openssl rand -hex 24"},
		{"weak token_env", "principals:\n  - {name: a, token_env: PH_TEST_WEAK}\n", "config pilothouse.yaml:2:26: principals[0].token_env: the token in environment variable PH_TEST_WEAK: a bearer token needs at least 32 characters, 8 of them different (this one has 6, 6 different): generate one with openssl rand -hex 24"},
		{"principal two tokens", "principals:\n  - name: a\n    token: 0123456789abcdef0123456789abcdef\n    token_sha256: abababababababababababababababababababababababababababababababab\n", "config pilothouse.yaml:2:5: principals[0]: set one of token_sha256, token_env and token"},
		{"principal twice", "principals:\n  - {name: a, token: 0123456789abcdef0123456789abcdef}\n  - {name: a, token: fedcba9876543210fedcba9876543210}\n", `config pilothouse.yaml:3:5: principals[1].name: principal "a" is defined twice`},
		{"token hash", "principals:\n  - {name: a, token_sha256: abc}\n", "config pilothouse.yaml:2:29: principals[0].token_sha256: want 64 hex digits (sha256sum of the token)"},
		{"admin type", "principals:\n  - {name: a, admin: yes please}\n", `config pilothouse.yaml:2:22: principals[0].admin: want true or false, got string "yes please"`},
		{"scope key", "principals:\n  - name: a\n    scope: {area: [x]}\n", "config pilothouse.yaml:3:13: principals[0].scope.area: unknown key (did you mean areas?)"},
		{"scope kind", "principals:\n  - name: a\n    scope: {kinds: [gadget]}\n", `config pilothouse.yaml:3:21: principals[0].scope.kinds[0]: unknown kind "gadget" (device, state, event, action, automation)`},
		{"scope risk", "principals:\n  - name: a\n    scope:\n      deny_risks: [scary]\n", `config pilothouse.yaml:4:20: principals[0].scope.deny_risks[0]: unknown risk "scary" (read, control, security, external)`},
		{"scope pattern", "principals:\n  - name: a\n    scope: {devices: [\"[x\"]}\n", `config pilothouse.yaml:3:23: principals[0].scope.devices[0]: bad device pattern "[x"`},
		{"stdio principal", "principals:\n  - {name: a, token: 0123456789abcdef0123456789abcdef}\nstdio_principal: b\n", `config pilothouse.yaml:3:18: stdio_principal: no principal named "b"`},
		{"notify id", "notify:\n  - {id: phone, topic: t}\n", `config pilothouse.yaml:2:10: notify[0].id: want an id such as "notify.phone", got "phone"`},
		{"notify both", "notify:\n  - {id: notify.x, topic: t, url: \"https://x\"}\n", "config pilothouse.yaml:2:5: notify[0]: set exactly one of topic, url and ntfy"},
		{"notify twice", "notify:\n  - {id: notify.x, topic: t}\n  - {id: notify.x, topic: u}\n", `config pilothouse.yaml:3:5: notify[1].id: channel "notify.x" is defined twice`},
		{"limit type", "limits:\n  max_steps: many\n", `config pilothouse.yaml:2:14: limits.max_steps: want an integer, got string "many"`},
		{"limit sign", "limits:\n  max_steps: -1\n", "config pilothouse.yaml:2:14: limits.max_steps: must be positive, got -1"},
		{"limit key", "limits:\n  max_step: 5\n", "config pilothouse.yaml:2:3: limits.max_step: unknown key (did you mean max_steps?)"},
		{"yaml syntax", "mqtt:\n  broker: [\n", "config pilothouse.yaml:2: did not find expected node content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadYAML(t, tc.body)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestConfigFileMissing(t *testing.T) {
	err := loadConfigFile(filepath.Join(t.TempDir(), "nope.yaml"), defaultConfig())
	if err == nil || !os.IsNotExist(errorsUnwrapAll(err)) {
		t.Fatalf("missing file: %v", err)
	}
}

func errorsUnwrapAll(err error) error {
	for {
		u := unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func unwrap(err error) error {
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return nil
	}
	return u.Unwrap()
}

// TestConfigFileExamples loads the shipped examples.
func TestConfigFileExamples(t *testing.T) {
	t.Setenv("PILOTHOUSE_MQTT_PASSWORD", "x")
	t.Setenv("PILOTHOUSE_OWNER_TOKEN", "0123456789abcdef0123456789abcdef")
	for _, f := range []string{"pilothouse.yaml", "pilothouse-mosquitto.yaml"} {
		c := defaultConfig()
		var warn bytes.Buffer
		if err := loadConfigFileWarn(filepath.Join("..", "..", "examples", f), c, &warn); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if warn.Len() > 0 {
			t.Errorf("%s warns: %s", f, warn.String())
		}
		if err := c.check(true); err != nil {
			t.Errorf("%s: check: %v", f, err)
		}
	}
}

func TestConfigFileArg(t *testing.T) {
	t.Setenv("PILOTHOUSE_CONFIG", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "a.yaml", "--demo=false"}, "a.yaml"},
		{[]string{"--demo=false", "-config=b.yaml"}, "b.yaml"},
		{[]string{"--addr", "x:1"}, ""},
		{[]string{"--", "--config", "c.yaml"}, ""},
	} {
		if got := configFileArg(tc.args); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	t.Setenv("PILOTHOUSE_CONFIG", "/etc/pilothouse/pilothouse.yaml")
	if got := configFileArg(nil); got != "/etc/pilothouse/pilothouse.yaml" {
		t.Errorf("from the environment: %q", got)
	}
	if got := configFileArg([]string{"--config", "d.yaml"}); got != "d.yaml" {
		t.Errorf("the flag wins over the environment: %q", got)
	}
}

// TestConfigFileAdminDefault: the principal named owner is an administrator
// unless the file says otherwise; no other principal is by default.
func TestConfigFileAdminDefault(t *testing.T) {
	c, _, err := loadYAML(t, "principals:\n  - {name: owner, admin: false}\n  - {name: guest}\n  - {name: ops, admin: true}\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Principals[0].Admin || c.Principals[1].Admin || !c.Principals[2].Admin {
		t.Fatalf("admin flags: owner %v, guest %v, ops %v", c.Principals[0].Admin, c.Principals[1].Admin, c.Principals[2].Admin)
	}
}

// TestTokenFlagStrength: --token and PILOTHOUSE_TOKEN refuse a weak token
// as the file does, without repeating it.
func TestTokenFlagStrength(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		args      []string
		ok        bool
	}{
		{"short flag", "", []string{"--token", "s3cret"}, false},
		{"short env", "s3cret", nil, false},
		{"strong flag", "", []string{"--token", "5f0c1e9a7b3d2c4e8f6a1b0d9c7e5a3f"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PILOTHOUSE_TOKEN", tc.env)
			_, err := parseFlags("serve", tc.args)
			if tc.ok != (err == nil) {
				t.Fatalf("error %v, want ok=%v", err, tc.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), "--token (or PILOTHOUSE_TOKEN): a bearer token needs at least 32 characters") ||
				strings.Contains(err.Error(), "s3cret")) {
				t.Fatalf("error %q: want the rule, without the token", err)
			}
		})
	}
}
