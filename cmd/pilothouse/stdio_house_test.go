package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
)

// stdioClient launches "pilothouse stdio args..." in dir with env, as a
// desktop assistant does, and initializes it (version "" lets mcp-go try
// the 2026-07-28 stateless core first). It returns the initialize error.
func stdioClient(t *testing.T, bin, dir string, env []string, version string, args ...string) (*client.Client, error) {
	t.Helper()
	c, err := client.NewStdioMCPClientWithOptions(bin, env, append([]string{"stdio"}, args...),
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = append(os.Environ(), env...), dir
			return cmd, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "desktop-assistant", Version: "1"}
	req.Params.ProtocolVersion = version
	_, err = c.Initialize(ctx, req)
	return c, err
}

func ruleList(t *testing.T, c *client.Client) []string {
	t.Helper()
	return testhouse.RuleNames(t, c)
}

func deployNamed(t *testing.T, c *client.Client, name string) {
	t.Helper()
	var prog map[string]any
	src := `{"name":"` + name + `","triggers":[{"id":"t","at":"06:30"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`
	if err := json.Unmarshal([]byte(src), &prog); err != nil {
		t.Fatal(err)
	}
	out, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog})
	if oc, _ := out["outcome"].(map[string]any); oc["ok"] != true {
		t.Fatalf("deploy %s: %v", name, out)
	}
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestStdioAndServeAreOneHouse: serve runs (as the quick start leaves it,
// with a principal configured) from one folder; a desktop assistant
// launches "pilothouse stdio" from another folder with no --data, and with
// the very broker port serve holds (where a second engine died): stdio
// finds the house in the per-user data folder, bridges to serve, sees the
// rules serve has, and what it deploys is serve's. Both the 2026-07-28
// stateless core and a session-based revision go through the bridge.
func TestStdioAndServeAreOneHouse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, "share")}
	cfgFile := filepath.Join(t.TempDir(), "house.yaml")
	if err := os.WriteFile(cfgFile, []byte("principals:\n  - {name: owner, token_sha256: "+engine.HashToken("owner-secret")+", deploy: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(bin, "serve", "--config", cfgFile, "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--demo-pace", "1h")
	serve.Dir, serve.Env = t.TempDir(), append(os.Environ(), env...)
	lines := startLog(t, serve)
	if got, want := logValue(lines, "data"), filepath.Join(home, "share", "pilothouse"); got != want {
		t.Fatalf("serve's data folder %q, want the per-user %q", got, want)
	}
	if logValue(lines, "addr") == "" || logValue(lines, "mcp") == "" {
		t.Fatalf("serve's log lacks its broker or MCP address:\n%s", strings.Join(lines, "\n"))
	}
	owner := mcpClient(t, logValue(lines, "mcp"), map[string]string{"Authorization": "Bearer owner-secret"}, "")
	deployNamed(t, owner, "from-serve")

	elsewhere := t.TempDir()
	for i, version := range []string{"", "2025-11-25"} {
		c, err := stdioClient(t, bin, elsewhere, env, version, "--broker-listen", logValue(lines, "addr"))
		if err != nil {
			t.Fatalf("stdio (%q) while serve runs: %v", version, err)
		}
		if names := ruleList(t, c); !has(names, "from-serve") {
			t.Fatalf("stdio (%q) does not see serve's rules: %v", version, names)
		}
		name := []string{"from-stdio-stateless", "from-stdio-session"}[i]
		deployNamed(t, c, name)
		if names := ruleList(t, owner); !has(names, name) {
			t.Fatalf("serve does not see the rule stdio (%q) deployed: %v", version, names)
		}
		tr, isErr := call(t, c, "pilotage_trace", map[string]any{"run_id": "run_nope"})
		if b, _ := json.Marshal(tr); !isErr || !strings.Contains(string(b), "not_found") {
			t.Fatalf("a Pilotage request error through the bridge: %v", tr)
		}
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "pilothouse-data")); err == nil {
		t.Error("stdio created ./pilothouse-data in the assistant's working folder")
	}
	// A second serve of the same house refuses to run a second engine.
	_, stderr, code := runBin(t, bin, env, "serve", "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "already serves the data folder "+logValue(lines, "data")) {
		t.Errorf("a second serve: exit %d, %s", code, stderr)
	}
}

// TestDataFolderChoice: the per-user folder by default; a ./pilothouse-data
// left by an earlier version is kept, with a line saying how to move it;
// --data (or the file's data_dir) wins.
func TestDataFolderChoice(t *testing.T) {
	for _, tc := range []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"linux", map[string]string{"HOME": "/home/a"}, "/home/a/.local/share/pilothouse"},
		{"linux", map[string]string{"HOME": "/home/a", "XDG_DATA_HOME": "/xdg"}, "/xdg/pilothouse"},
		{"linux", map[string]string{"HOME": "/home/a", "XDG_DATA_HOME": "relative"}, "/home/a/.local/share/pilothouse"},
		{"darwin", map[string]string{"HOME": "/Users/a"}, "/Users/a/Library/Application Support/pilothouse"},
		{"windows", map[string]string{"LOCALAPPDATA": "/appdata"}, "/appdata/pilothouse"},
	} {
		got, err := userDataDir(func(k string) string { return tc.env[k] }, tc.goos)
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("%s %v: %q %v, want %q", tc.goos, tc.env, got, err, tc.want)
		}
	}
	if _, err := userDataDir(func(string) string { return "" }, "linux"); err == nil {
		t.Error("no HOME, no XDG_DATA_HOME: no error")
	}

	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Chdir(t.TempDir())
	c := &Config{}
	if note := resolveDataDir(c); note != "" || c.DataDir != filepath.Join(home, ".local", "share", "pilothouse") {
		t.Errorf("default: %q, note %q", c.DataDir, note)
	}
	if err := os.Mkdir("pilothouse-data", 0o750); err != nil {
		t.Fatal(err)
	}
	c = &Config{}
	note := resolveDataDir(c)
	if abs, _ := filepath.Abs("pilothouse-data"); c.DataDir != abs || !strings.Contains(note, "using ./pilothouse-data") || !strings.Contains(note, "mv pilothouse-data") {
		t.Errorf("legacy folder: %q, note %q", c.DataDir, note)
	}
	c = &Config{DataDir: "/chosen"}
	if note := resolveDataDir(c); note != "" || c.DataDir != "/chosen" {
		t.Errorf("--data: %q, note %q", c.DataDir, note)
	}
}

// TestStdioStartupFailureInWords: when stdio cannot start, the MCP client
// reads why in the answer to initialize, not "Connection closed".
func TestStdioStartupFailureInWords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	notAFolder := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(notAFolder, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		name      string
		env, args []string
		version   string
		want      string
	}{
		{"unusable data folder", nil, []string{"--data", notAFolder}, "", "the data folder " + notAFolder},
		{"broker port taken", nil, []string{"--data", t.TempDir(), "--broker-listen", held.Addr().String()}, "2025-11-25",
			"starting the embedded MQTT broker on " + held.Addr().String()},
		{"bad environment value", []string{"PILOTHOUSE_DEMO=maybe"}, nil, "", `PILOTHOUSE_DEMO="maybe": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stdioClient(t, bin, t.TempDir(), append(tc.env, "HOME="+t.TempDir(), "XDG_DATA_HOME="), tc.version, tc.args...)
			if err == nil || !strings.Contains(err.Error(), "pilothouse could not start: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("initialize: %v\nwant the words %q", err, tc.want)
			}
		})
	}
}
