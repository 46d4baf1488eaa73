package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneHostPolicy: /mcp and the web UI apply the same allowed-host policy
// (loopback names, IP addresses and allowed_hosts), /healthz stays open. A
// configured name works on both, through a loopback connection as a local
// reverse proxy would make it.
func TestOneHostPolicy(t *testing.T) {
	cfg := testConfig(t)
	cfg.AllowedHosts = []string{"pilothouse.lan"}
	a := startTestApp(t, cfg)
	port := a.URL()[strings.LastIndex(a.URL(), ":"):]
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	do := func(method, path, host, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, a.URL()+path, strings.NewReader(body))
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
		if path == "/mcp" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		host string
		want int
	}{
		{"evil.example" + port, http.StatusForbidden},
		{"pilothouse.lan.evil.example" + port, http.StatusForbidden},
		{"localhost.evil.example" + port, http.StatusForbidden},
		{"pilothouse.lan" + port, http.StatusOK},
		{"PilotHouse.LAN" + port, http.StatusOK},
		{"localhost" + port, http.StatusOK},
		{"127.0.0.1" + port, http.StatusOK},
		{"[::1]" + port, http.StatusOK},
	} {
		if code, body := do("POST", "/mcp", tc.host, initialize); code != tc.want {
			t.Errorf("/mcp with Host %s: %d %q, want %d", tc.host, code, body, tc.want)
		}
		if code, body := do("GET", "/devices", tc.host, ""); code != tc.want {
			t.Errorf("web UI with Host %s: %d, want %d", tc.host, code, tc.want)
		} else if code == http.StatusForbidden && !strings.Contains(body, "allowed_hosts") {
			t.Errorf("the refusal does not say how to allow a name: %q", body)
		}
		if code, _ := do("GET", "/healthz", tc.host, ""); code != http.StatusOK {
			t.Errorf("/healthz with Host %s: %d", tc.host, code)
		}
	}
}

// TestConfigFileHostsAndOrigins: allowed_hosts and allowed_origins from the
// file reach the server (the flag parser used to reset allowed_origins to
// the flag's empty default); flags still override.
func TestConfigFileHostsAndOrigins(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pilothouse.yaml")
	if err := os.WriteFile(file, []byte("allowed_origins: [https://home.example.com]\nallowed_hosts: [pilothouse.lan]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseFlags("serve", []string{"--config", file})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.AllowedOrigins, ",") != "https://home.example.com" || strings.Join(c.AllowedHosts, ",") != "pilothouse.lan" {
		t.Fatalf("from the file: origins %v, hosts %v", c.AllowedOrigins, c.AllowedHosts)
	}
	c, err = parseFlags("serve", []string{"--config", file, "--allowed-hosts", "a.lan, b.lan"})
	if err != nil || strings.Join(c.AllowedHosts, ",") != "a.lan,b.lan" {
		t.Fatalf("--allowed-hosts: %v %v", c.AllowedHosts, err)
	}
	c.AllowedHosts = []string{"http://x"}
	if err := c.check(false); err == nil || !strings.Contains(err.Error(), "host name") {
		t.Fatalf("a URL as host: %v", err)
	}
}

// TestRequestLimitCarriesProgramAndInput: a request bound too small for the
// largest program and input is a configuration error, not a server that
// refuses valid requests.
func TestRequestLimitCarriesProgramAndInput(t *testing.T) {
	c := testConfig(t)
	c.Limits.MaxRequestBytes = c.Limits.MaxProgramBytes
	if err := c.check(false); err == nil || !strings.Contains(err.Error(), "limits.max_request_bytes") {
		t.Fatalf("want a limits error, got %v", err)
	}
}
