package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// One house whatever starts it: serve and stdio find the same data folder
// (a per-user default, not the working directory), and a running serve
// announces itself in that folder so stdio bridges to it instead of
// starting a second engine on the same rules.

// legacyDataDir is where earlier versions kept the data: the working
// directory's ./pilothouse-data.
const legacyDataDir = "pilothouse-data"

// endpointFile is the file in the data folder where a running serve says
// where it answers.
const endpointFile = "server.json"

// userDataDir is the per-user default data folder: $XDG_DATA_HOME/pilothouse
// when set, else the platform's (~/.local/share/pilothouse on Linux and
// other Unixes, ~/Library/Application Support/pilothouse on macOS,
// %LOCALAPPDATA%\pilothouse on Windows).
func userDataDir(getenv func(string) string, goos string) (string, error) {
	if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "pilothouse"), nil
	}
	if goos == "windows" {
		if d := getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "pilothouse"), nil
		}
	}
	home := getenv("HOME")
	if goos == "windows" && home == "" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		return "", errors.New("neither XDG_DATA_HOME nor HOME is set")
	}
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "pilothouse"), nil
	}
	return filepath.Join(home, ".local", "share", "pilothouse"), nil
}

// resolveDataDir fills in the data folder when neither --data,
// PILOTHOUSE_DATA nor the file's data_dir chose one, and returns a line to
// log about the choice ("" = nothing to say). A ./pilothouse-data left in the
// working directory by an earlier version is kept in use, so its rules are
// not lost, with a line saying how to move it.
func resolveDataDir(c *Config) string {
	if c.DataDir != "" {
		return ""
	}
	def, err := userDataDir(os.Getenv, runtime.GOOS)
	if st, serr := os.Stat(legacyDataDir); serr == nil && st.IsDir() {
		c.DataDir, _ = filepath.Abs(legacyDataDir)
		if err != nil {
			return "using ./pilothouse-data in the working directory (found from an earlier version)"
		}
		return fmt.Sprintf("using ./pilothouse-data in the working directory (found from an earlier version); "+
			"pilothouse now keeps its data in %s, whatever the working directory: move the folder there "+
			"(mv pilothouse-data %q) so every start, and pilothouse stdio, finds the same house, or pass --data", def, def)
	}
	if err != nil {
		c.DataDir, _ = filepath.Abs(legacyDataDir)
		return fmt.Sprintf("no per-user data folder (%v): using %s; pass --data to choose", err, c.DataDir)
	}
	c.DataDir = def
	return ""
}

// endpoint is what a running serve writes into its data folder: where its
// MCP endpoint answers and, when principals are configured, a token only
// this house's user can read that runs as the stdio principal.
type endpoint struct {
	PID      int       `json:"pid"`
	MCP      string    `json:"mcp"`
	Health   string    `json:"health"`
	Token    string    `json:"token,omitempty"`
	Instance string    `json:"instance"`
	Started  time.Time `json:"started"`
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeEndpoint writes the endpoint file (owner-only), atomically when it
// can; on a full disk, where the temporary copy finds no room, it rewrites
// the file left by the last run in place (its room is freed by the
// truncation; a reader that catches it half written reads again).
func writeEndpoint(dir string, ep endpoint) error {
	err := writeEndpointAtomic(dir, ep)
	if err == nil {
		return nil
	}
	b, _ := json.MarshalIndent(ep, "", "  ")
	path := filepath.Join(dir, endpointFile)
	if _, serr := os.Stat(path); serr != nil {
		return err
	}
	if ierr := os.WriteFile(path, append(b, '\n'), 0o600); ierr != nil {
		return errors.Join(err, ierr)
	}
	return nil
}

func writeEndpointAtomic(dir string, ep endpoint) error {
	b, err := json.MarshalIndent(ep, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".server-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, endpointFile))
}

// removeEndpoint removes the endpoint file if it is still instance's.
func removeEndpoint(dir, instance string) {
	if ep, err := readEndpoint(dir); err == nil && ep.Instance == instance {
		_ = os.Remove(filepath.Join(dir, endpointFile))
	}
}

func readEndpoint(dir string) (endpoint, error) {
	var ep endpoint
	b, err := os.ReadFile(filepath.Join(dir, endpointFile))
	if err != nil {
		return ep, err
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		return ep, fmt.Errorf("%s: %w", filepath.Join(dir, endpointFile), err)
	}
	return ep, nil
}

// localURL is a loopback URL for a listener (one bound to every interface
// is reached on loopback).
func localURL(addr net.Addr) string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	ip := ta.IP
	switch {
	case ip == nil || ip.IsUnspecified() && ip.To4() != nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return "http://" + net.JoinHostPort(ip.String(), fmt.Sprint(ta.Port))
}

// mcpPrincipals are the principals the MCP endpoint accepts: the configured
// ones and, when there are any, the house's local token running as the
// stdio principal (what pilothouse stdio bridges with). Without configured
// principals loopback callers need no token.
func (a *app) mcpPrincipals() []*engine.Principal {
	if len(a.cfg.Principals) == 0 {
		return nil
	}
	if a.localToken == "" {
		a.localToken = randomHex(32)
	}
	local := *a.cfg.stdioPrincipal()
	local.TokenHash = engine.HashToken(a.localToken)
	return append(append([]*engine.Principal(nil), a.cfg.Principals...), &local)
}
