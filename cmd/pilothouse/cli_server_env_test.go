package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
)

// TestClientCommandsWithServerFromEnv: `rules` and `trace` with
// PILOTHOUSE_SERVER set get past MCP's initialize on a serve that needs a
// token: the server written as its MCP URL, as http://host:port or as
// host:port, takes the data folder's local token when it is that
// folder's serve.
func TestClientCommandsWithServerFromEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	cfgFile := filepath.Join(t.TempDir(), "house.yaml")
	body := "principals:\n  - {name: owner, token_sha256: " + engine.HashToken("owner-secret") + ", deploy: true}\n"
	if err := os.WriteFile(cfgFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	startedLine(t, exec.Command(bin, "serve", "--config", cfgFile, "--data", data, "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--demo-pace", "1h"))
	ep, err := readEndpoint(data)
	if err != nil || ep.MCP == "" {
		t.Fatalf("server.json: %+v, %v", ep, err)
	}
	u, _ := url.Parse(ep.MCP)
	for _, server := range []string{ep.MCP, "http://" + u.Host, "http://localhost:" + u.Port() + "/", u.Host} {
		for _, args := range [][]string{{"rules"}, {"trace", "no-such-run"}} {
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "PILOTHOUSE_SERVER="+server, "PILOTHOUSE_DATA="+data, "PILOTHOUSE_TOKEN=")
			out, _ := cmd.CombinedOutput()
			want := "no rules installed"
			if args[0] == "trace" {
				want = "not_found"
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("PILOTHOUSE_SERVER=%s pilothouse %s:\n%s", server, strings.Join(args, " "), out)
			}
		}
	}
}
