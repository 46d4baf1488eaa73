package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// documentedKey is one key of docs/configuration.md's key tables, with the
// flag its row names ("" = file only) and the environment variable, if the
// row names one.
type documentedKey struct{ key, flag, env string }

// documentedKeys reads the key tables of the "## Keys" section: the main
// table and the per-item tables of its subsections (`principals[]` →
// principals[].name, `limits` → limits.max_wall).
func documentedKeys(t *testing.T) []documentedKey {
	t.Helper()
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []documentedKey
	in, prefix, flagCol := false, "", -1
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Keys"
			prefix = ""
		case in && strings.HasPrefix(line, "### "):
			prefix = ""
			if h := strings.TrimPrefix(line, "### "); strings.HasPrefix(h, "`") {
				prefix = strings.Trim(h, "`") + "."
			}
		case in && strings.HasPrefix(line, "| key |"):
			flagCol = -1
			for i, h := range strings.Split(line, "|") {
				if strings.Contains(h, "flag") {
					flagCol = i
				}
			}
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(line, "|")
			k := documentedKey{key: prefix + strings.Trim(strings.TrimSpace(cells[1]), "`")}
			if flagCol > 0 {
				for _, f := range strings.Fields(strings.ReplaceAll(cells[flagCol], "`", "")) {
					if strings.HasPrefix(f, "--") && k.flag == "" {
						k.flag = strings.TrimPrefix(f, "--")
					}
					if strings.HasPrefix(f, envPrefix) {
						k.env = f
					}
				}
			}
			if !strings.HasSuffix(k.key, ".*") { // limits.* stands for the limits table
				out = append(out, k)
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("read only %d keys from docs/configuration.md: has its layout changed?", len(out))
	}
	return out
}

// keyRow proves one key: the file sets want[0]; the environment variable
// of the key's flag, over the file, want[1]; the flag, over both, want[2].
type keyRow struct {
	file      string // the configuration file setting the key
	env, flag string // values given as PILOTHOUSE_<FLAG> and as --<flag>; "" for a file-only key
	get       func(c *Config) any
	want      []any
}

func strRow(yamlf string, get func(*Config) any, file, env, flag string) keyRow {
	return keyRow{file: fmt.Sprintf(yamlf, file), env: env, flag: flag, get: get, want: []any{file, env, flag}}
}

func fileRow(file string, get func(*Config) any, want any) keyRow {
	return keyRow{file: file, get: get, want: []any{want}}
}

// TestEveryDocumentedKeyTakesEffect: each key docs/configuration.md
// documents reaches the configuration serve runs with (parseFlags, and the
// engine's view of it), from the file, and where a flag is documented from
// its environment variable over the file and from the flag over both —
// the documented precedence. A key documented without a row here fails.
func TestEveryDocumentedKeyTakesEffect(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PH_KEYS_SECRET", "env-secret-0123456789abcdefghijkl")
	rows := map[string]keyRow{}
	for _, part := range []map[string]keyRow{mainKeyRows(dir), moreKeyRows(), itemKeyRows(), limitKeyRows()} {
		for k, r := range part {
			rows[k] = r
		}
	}
	documented := map[string]bool{}
	for _, dk := range documentedKeys(t) {
		documented[dk.key] = true
		r, ok := rows[dk.key]
		switch {
		case !ok:
			t.Errorf("%s is documented but no row proves it takes effect", dk.key)
			continue
		case (dk.flag != "") != (r.flag != ""):
			t.Errorf("%s: the doc names flag %q; the row's flag value is %q", dk.key, dk.flag, r.flag)
			continue
		case dk.env != "" && dk.env != flagEnv(dk.flag):
			t.Errorf("%s: the doc names variable %s; --%s reads %s", dk.key, dk.env, dk.flag, flagEnv(dk.flag))
		}
		t.Run(dk.key, func(t *testing.T) { checkKeyRow(t, dir, dk, r) })
	}
	var stale []string
	for k := range rows {
		if !documented[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("rows for keys docs/configuration.md does not document: %v", stale)
	}
}

// TestConfigTimeZoneReachesTheServer: the configuration file's time_zone
// is the zone the running server reports (pilotage_discover) and
// schedules in (a deploy's next_fire), as --tz used to wipe it to UTC.
func TestConfigTimeZoneReachesTheServer(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pilothouse.yaml")
	conf := "listen: 127.0.0.1:0\nmqtt: {embedded_listen: 127.0.0.1:0}\ndemo: {pace: 1h}\ntime_zone: Asia/Tokyo\ndata_dir: " + dir + "\n"
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags("serve", []string{"--config", file})
	if err != nil {
		t.Fatal(err)
	}
	a := startTestApp(t, cfg)
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	man, _ := call(t, c, "pilotage_discover", map[string]any{})
	env, _ := man["languages"].([]any)[0].(map[string]any)["environment"].(map[string]any)
	if env["time_zone"] != "Asia/Tokyo" {
		t.Errorf("discover: time_zone %v, want Asia/Tokyo", env["time_zone"])
	}
	out, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1",
		"program": map[string]any{"name": "tz", "triggers": []any{map[string]any{"id": "t", "at": "07:00"}}, "steps": []any{map[string]any{"id": "x", "stop": ""}}}})
	if b, _ := json.Marshal(out); !strings.Contains(string(b), "T07:00:00+09:00") {
		t.Errorf("deploy: want next_fire at 07:00 +09:00: %s", b)
	}
}

func checkKeyRow(t *testing.T, dir string, dk documentedKey, r keyRow) {
	file := filepath.Join(dir, strings.NewReplacer("[]", "", ".", "_").Replace(dk.key)+".yaml")
	if err := os.WriteFile(file, []byte(r.file), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T, args ...string) any {
		t.Helper()
		c, err := parseFlags("serve", args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return r.get(c)
	}
	prev := read(t) // the default
	stages := []struct {
		name string
		set  func(t *testing.T) []string
	}{
		{"file", func(*testing.T) []string { return []string{"--config", file} }},
		{"env", func(t *testing.T) []string { t.Setenv(flagEnv(dk.flag), r.env); return []string{"--config", file} }},
		{"flag", func(t *testing.T) []string {
			t.Setenv(flagEnv(dk.flag), r.env)
			return []string{"--config", file, "--" + dk.flag + "=" + r.flag}
		}},
	}
	for i, want := range r.want {
		st := stages[i]
		t.Run(st.name, func(t *testing.T) {
			if reflect.DeepEqual(want, prev) {
				t.Fatalf("the row's %s value %v is what the layer below gives: it proves nothing", st.name, want)
			}
			if got := read(t, st.set(t)...); !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
		prev = want
	}
}

func mainKeyRows(dir string) map[string]keyRow {
	ca := func(n string) string {
		p := filepath.Join(dir, n+".pem")
		if err := os.WriteFile(p, []byte("-"), 0o600); err != nil {
			panic(err)
		}
		return p
	}
	ec := func(c *Config) engine.Config { return c.engineConfig() }
	return map[string]keyRow{
		"listen":                           strRow("listen: %s", func(c *Config) any { return c.Addr }, "127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"),
		"allowed_origins":                  {file: "allowed_origins: [https://a.example]", env: "https://b.example", flag: "https://c.example", get: func(c *Config) any { return c.AllowedOrigins }, want: []any{[]string{"https://a.example"}, []string{"https://b.example"}, []string{"https://c.example"}}},
		"allowed_hosts":                    {file: "allowed_hosts: [a.lan]", env: "b.lan", flag: "c.lan", get: func(c *Config) any { return c.AllowedHosts }, want: []any{[]string{"a.lan"}, []string{"b.lan"}, []string{"c.lan"}}},
		"data_dir":                         strRow("data_dir: %s", func(c *Config) any { return c.DataDir }, "/srv/a", "/srv/b", "/srv/c"),
		"mqtt.broker":                      strRow("mqtt: {broker: %q}", func(c *Config) any { return c.Broker }, "tcp://a:1883", "tcp://b:1883", "tcp://c:1883"),
		"mqtt.embedded_listen":             strRow("mqtt: {embedded_listen: %q}", func(c *Config) any { return c.BrokerListen }, "127.0.0.1:1884", "127.0.0.1:1885", "127.0.0.1:1886"),
		"mqtt.embedded_users":              fileRow("mqtt: {embedded_users: [{username: z, password: pw}]}", func(c *Config) any { return len(c.BrokerUsers) }, 1),
		"mqtt.max_message_bytes":           fileRow("mqtt: {max_message_bytes: 1000}", func(c *Config) any { return c.MaxMessageBytes }, 1000),
		"mqtt.embedded_max_retained_bytes": fileRow("mqtt: {embedded_max_retained_bytes: 2000}", func(c *Config) any { return c.BrokerMaxRetained }, 2000),
		"mqtt.client_id":                   strRow("mqtt: {client_id: %s}", func(c *Config) any { return c.ClientID }, "a", "b", "c"),
		"mqtt.username":                    strRow("mqtt: {username: %s}", func(c *Config) any { return c.MQTTUser }, "a", "b", "c"),
		"mqtt.password":                    strRow("mqtt: {password: %s}", func(c *Config) any { return c.MQTTPassword }, "a", "b", "c"),
		"mqtt.password_env":                fileRow("mqtt: {password_env: PH_KEYS_SECRET}", func(c *Config) any { return c.MQTTPassword }, "env-secret-0123456789abcdefghijkl"),
		"mqtt.ca_file":                     strRow("mqtt: {ca_file: %q}", func(c *Config) any { return c.MQTTCAFile }, ca("a"), ca("b"), ca("c")),
		"mqtt.insecure_skip_verify":        {file: "mqtt: {insecure_skip_verify: true}", env: "false", flag: "true", get: func(c *Config) any { return c.MQTTInsecure }, want: []any{true, false, true}},
		"zigbee2mqtt.base_topic":           strRow("zigbee2mqtt: {base_topic: %s}", func(c *Config) any { return c.Z2MBase }, "a", "b", "c"),
		"homeassistant.discovery_prefix":   strRow("homeassistant: {discovery_prefix: %s}", func(c *Config) any { return c.HAPrefix }, "a", "b", "c"),
		"demo.enabled":                     {file: "demo: {enabled: false}", env: "true", flag: "false", get: func(c *Config) any { return c.Demo }, want: []any{false, true, false}},
		"demo.pace":                        {file: "demo: {pace: 5s}", env: "6s", flag: "7s", get: func(c *Config) any { return c.DemoPace }, want: []any{5 * time.Second, 6 * time.Second, 7 * time.Second}},
		"location.latitude":                {file: "location: {latitude: 10, longitude: 20}", env: "11", flag: "12", get: func(c *Config) any { return ec(c).Location.Latitude }, want: []any{10.0, 11.0, 12.0}},
		"location.longitude":               {file: "location: {latitude: 10, longitude: 20}", env: "21", flag: "22", get: func(c *Config) any { return ec(c).Location.Longitude }, want: []any{20.0, 21.0, 22.0}},
		"time_zone":                        strRow("time_zone: %s", func(c *Config) any { return ec(c).TimeZone.String() }, "Europe/Paris", "America/New_York", "Asia/Tokyo"),
		"retention":                        {file: "retention: P7D", env: "P8D", flag: "P9D", get: func(c *Config) any { return ec(c).Retention }, want: []any{7 * 24 * time.Hour, 8 * 24 * time.Hour, 9 * 24 * time.Hour}},
	}
}

func moreKeyRows() map[string]keyRow {
	hash := func(tok string) string { return engine.HashToken(tok) }
	owner := func(c *Config) any {
		for _, p := range c.Principals {
			if p.Name == "owner" {
				return p.TokenHash
			}
		}
		return nil
	}
	phone := func(c *Config) any {
		for _, n := range c.Notify {
			if n.ID == "notify.phone" {
				return n.Topic
			}
		}
		return nil
	}
	tokA, tokB, tokC := "file-token-0123456789abcdefghijkl", "envt-token-0123456789abcdefghijkl", "flag-token-0123456789abcdefghijkl"
	return map[string]keyRow{
		"history.enabled":       fileRow("history: {enabled: false}", func(c *Config) any { return c.engineConfig().History.Off }, true),
		"history.retention":     fileRow("history: {retention: 48h}", func(c *Config) any { return c.engineConfig().History.Retention }, 48*time.Hour),
		"history.max_rows":      fileRow("history: {max_rows: 1000}", func(c *Config) any { return c.engineConfig().History.MaxRows }, 1000),
		"log.level":             strRow("log: {level: %s}", func(c *Config) any { return c.LogLevel }, "debug", "warn", "error"),
		"log.json":              {file: "log: {json: true}", env: "false", flag: "true", get: func(c *Config) any { return c.LogJSON }, want: []any{true, false, true}},
		"areas":                 fileRow("areas: {hall: [hall_*]}", func(c *Config) any { return fmt.Sprint(c.Areas) }, "[{hall [hall_*]}]"),
		"principals":            {file: "principals: [{name: owner, token_sha256: " + hash(tokA) + "}]", env: tokB, flag: tokC, get: owner, want: []any{hash(tokA), hash(tokB), hash(tokC)}},
		"stdio_principal":       fileRow("principals: [{name: kid}]\nstdio_principal: kid", func(c *Config) any { return c.stdioPrincipal().Name }, "kid"),
		"stdio_request_timeout": {file: "stdio_request_timeout: 5s", env: "6s", flag: "7s", get: func(c *Config) any { return c.StdioTimeout }, want: []any{5 * time.Second, 6 * time.Second, 7 * time.Second}},
		"notify":                strRow("notify: [{id: notify.phone, topic: %s}]", phone, "t/a", "t/b", "t/c"),
		"helpers": fileRow("helpers: [{id: target, kind: number, min: 5, max: 30, step: 0.5, unit: °C, area: living, initial: 20}]",
			func(c *Config) any {
				if len(c.Helpers) == 0 {
					return "none"
				}
				h := c.Helpers[0]
				return fmt.Sprintf("%s %s %v..%v %v", h.ID, h.Area, *h.Min, *h.Max, h.Initial)
			}, "target living 5..30 20"),
	}
}

// itemKeyRows are the keys of list items: principals, broker users and
// notification channels.
func itemKeyRows() map[string]keyRow {
	p := func(item string, get func(p *engine.Principal) any, want any) keyRow {
		return fileRow("principals: [{name: p1, "+item+"}]", func(c *Config) any {
			if len(c.Principals) == 0 {
				return nil
			}
			return get(c.Principals[0])
		}, want)
	}
	u := func(item string, get func(u int, c *Config) any, want any) keyRow {
		return fileRow("mqtt: {embedded_users: [{username: u1, "+item+"}]}", func(c *Config) any {
			if len(c.BrokerUsers) == 0 {
				return nil
			}
			return get(0, c)
		}, want)
	}
	n := func(item string, get func(c *Config) any, want any) keyRow {
		return fileRow("notify: [{id: notify.pager, "+item+"}]", func(c *Config) any {
			if len(c.Notify) == 0 || c.Notify[0].ID != "notify.pager" {
				return nil
			}
			return get(c)
		}, want)
	}
	const tok = "file-token-0123456789abcdefghijkl"
	const pwHash = "$7$101$G7JLv755jhrvDlXi$mkBibJJZF8TztXyjyLNTFFVb05yQyu1PgLlcMo6EusqCipQIAgOEYv4ike9KJmUksQVvJv1bdmHO177ZoTKO8w=="
	return map[string]keyRow{
		"principals[].name":                p("deploy: false", func(p *engine.Principal) any { return p.Name }, "p1"),
		"principals[].token_sha256":        p("token_sha256: "+engine.HashToken(tok), func(p *engine.Principal) any { return p.TokenHash }, engine.HashToken(tok)),
		"principals[].token_env":           p("token_env: PH_KEYS_SECRET", func(p *engine.Principal) any { return p.TokenHash }, engine.HashToken("env-secret-0123456789abcdefghijkl")),
		"principals[].token":               p("token: "+tok, func(p *engine.Principal) any { return p.TokenHash }, engine.HashToken(tok)),
		"principals[].deploy":              p("deploy: true", func(p *engine.Principal) any { return p.Deploy }, true),
		"principals[].admin":               p("admin: true", func(p *engine.Principal) any { return p.Admin }, true),
		"principals[].scope.areas":         p("scope: {areas: [hall]}", func(p *engine.Principal) any { return p.Scope.Areas }, []string{"hall"}),
		"principals[].scope.allow_no_area": p("scope: {areas: [hall], allow_no_area: true}", func(p *engine.Principal) any { return p.Scope.AllowNoArea }, true),
		"principals[].scope.devices":       p("scope: {devices: [hall_*]}", func(p *engine.Principal) any { return p.Scope.Devices }, []string{"hall_*"}),
		"principals[].scope.deny_devices":  p("scope: {deny_devices: [front_lock]}", func(p *engine.Principal) any { return p.Scope.DenyDevices }, []string{"front_lock"}),
		"principals[].scope.kinds":         p("scope: {kinds: [state]}", func(p *engine.Principal) any { return p.Scope.Kinds }, []pilotage.Kind{"state"}),
		"principals[].scope.deny_types":    p("scope: {deny_types: [lock]}", func(p *engine.Principal) any { return p.Scope.DenyTypes }, []string{"lock"}),
		"principals[].scope.deny_risks":    p("scope: {deny_risks: [security]}", func(p *engine.Principal) any { return p.Scope.DenyRisks }, []pilotage.Risk{"security"}),

		"mqtt.embedded_users[].username":      u("password: pw", func(i int, c *Config) any { return c.BrokerUsers[i].Name }, "u1"),
		"mqtt.embedded_users[].password_hash": u("password_hash: '"+pwHash+"'", func(i int, c *Config) any { return c.BrokerUsers[i].PasswordHash }, pwHash),
		"mqtt.embedded_users[].password_env":  u("password_env: PH_KEYS_SECRET", func(i int, c *Config) any { return c.BrokerUsers[i].Password }, "env-secret-0123456789abcdefghijkl"),
		"mqtt.embedded_users[].password":      u("password: pw", func(i int, c *Config) any { return c.BrokerUsers[i].Password }, "pw"),
		"mqtt.embedded_users[].read":          u("password: pw, read: [a/#]", func(i int, c *Config) any { return c.BrokerUsers[i].Read }, []string{"a/#"}),
		"mqtt.embedded_users[].write":         u("password: pw, write: [b/#]", func(i int, c *Config) any { return c.BrokerUsers[i].Write }, []string{"b/#"}),

		"notify[].id":       n("topic: t", func(c *Config) any { return c.Notify[0].ID }, "notify.pager"),
		"notify[].name":     n("name: Pager, topic: t", func(c *Config) any { return c.Notify[0].Name }, "Pager"),
		"notify[].topic":    n("topic: t/p", func(c *Config) any { return c.Notify[0].Topic }, "t/p"),
		"notify[].url":      n("url: 'https://hooks.example/p'", func(c *Config) any { return c.Notify[0].URL }, "https://hooks.example/p"),
		"notify[].ntfy":     n("ntfy: 'https://ntfy.example/house'", func(c *Config) any { return c.Notify[0].Ntfy }, "https://ntfy.example/house"),
		"notify[].priority": n("ntfy: 'https://ntfy.example/house', priority: high", func(c *Config) any { return c.Notify[0].Priority }, "high"),
		"notify[].tags":     n("ntfy: 'https://ntfy.example/house', tags: [house]", func(c *Config) any { return c.Notify[0].Tags }, []string{"house"}),
	}
}

// limitKeyRows sets each limit one step above its default.
func limitKeyRows() map[string]keyRow {
	fields := map[string]func(l rules.Limits) any{
		"max_request_bytes": func(l rules.Limits) any { return l.MaxRequestBytes },
		"max_arg_bytes":     func(l rules.Limits) any { return l.MaxArgBytes },
		"max_input_bytes":   func(l rules.Limits) any { return l.MaxInputBytes },
		"max_program_bytes": func(l rules.Limits) any { return l.MaxProgramBytes },
		"max_nodes":         func(l rules.Limits) any { return l.MaxNodes },
		"max_depth":         func(l rules.Limits) any { return l.MaxDepth },
		"max_expr_nodes":    func(l rules.Limits) any { return l.MaxExprNodes },
		"max_expr_len":      func(l rules.Limits) any { return l.MaxExprLen },
		"validate_wall":     func(l rules.Limits) any { return l.ValidateWall },
		"max_steps":         func(l rules.Limits) any { return l.MaxSteps },
		"max_iterations":    func(l rules.Limits) any { return l.MaxIterations },
		"max_wall":          func(l rules.Limits) any { return l.MaxWall },
		"max_call_depth":    func(l rules.Limits) any { return l.MaxCallDepth },
		"memory_budget":     func(l rules.Limits) any { return l.MemoryBudget },
		"max_concurrent":    func(l rules.Limits) any { return l.MaxConcurrent },
		"max_set_values":    func(l rules.Limits) any { return l.MaxSetValues },
		"max_value_bytes":   func(l rules.Limits) any { return l.MaxValueBytes },
		"max_eval_bytes":    func(l rules.Limits) any { return l.MaxEvalBytes },
		"max_run_bytes":     func(l rules.Limits) any { return l.MaxRunBytes },
		"max_eval_ops":      func(l rules.Limits) any { return l.MaxEvalOps },
		"max_run_ops":       func(l rules.Limits) any { return l.MaxRunOps },
		"max_test_run_wall": func(l rules.Limits) any { return l.MaxTestRunWall },

		"max_connections":                func(l rules.Limits) any { return l.MaxConnections },
		"max_streams":                    func(l rules.Limits) any { return l.MaxStreams },
		"max_streams_per_principal":      func(l rules.Limits) any { return l.MaxStreamsPerPrincipal },
		"max_sessions":                   func(l rules.Limits) any { return l.MaxSessions },
		"max_sessions_per_principal":     func(l rules.Limits) any { return l.MaxSessionsPerPrincipal },
		"session_idle":                   func(l rules.Limits) any { return l.SessionIdle },
		"max_stored_test_runs":           func(l rules.Limits) any { return l.MaxStoredTestRuns },
		"max_served_run_bytes":           func(l rules.Limits) any { return l.MaxServedRunBytes },
		"max_stored_test_bytes":          func(l rules.Limits) any { return l.MaxStoredTestBytes },
		"max_stored_rule_bytes":          func(l rules.Limits) any { return l.MaxStoredRuleBytes },
		"max_stored_firing_bytes":        func(l rules.Limits) any { return l.MaxStoredFiringBytes },
		"max_rules_per_principal":        func(l rules.Limits) any { return l.MaxRulesPerPrincipal },
		"max_live_firings_per_principal": func(l rules.Limits) any { return l.MaxLiveFiringsPerPrincipal },
		"max_live_firings_admin":         func(l rules.Limits) any { return l.MaxLiveFiringsAdmin },
	}
	out := map[string]keyRow{}
	for k, get := range fields {
		var want any
		var text string
		switch v := get(rules.DefaultLimits).(type) {
		case int:
			want, text = v+1, fmt.Sprint(v+1)
		case uint:
			want, text = v+1, fmt.Sprint(v+1)
		case time.Duration:
			want, text = v+time.Second, fmt.Sprintf("%q", v+time.Second)
		default:
			panic(fmt.Sprintf("limits.%s: a %T", k, v))
		}
		out["limits."+k] = fileRow(fmt.Sprintf("limits: {%s: %s}", k, text), func(c *Config) any { return get(c.Limits) }, want)
	}
	return out
}
