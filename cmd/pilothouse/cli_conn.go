package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/pilothouse/pilothouse/pilotclient"
)

// conn holds the connection flags every client command shares. The server
// is --server, else PILOTHOUSE_SERVER, else the serve that announced itself
// in the data folder's server.json (with its local token), else
// defaultServer.
type conn struct {
	server, token, data string
	// guessed: no flag, variable or server.json named the server, so
	// it is defaultServer; dataDir is the folder searched for server.json.
	guessed bool
	dataDir string
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", os.Getenv("PILOTHOUSE_SERVER"),
		"MCP endpoint of the server, or its address (host:8080 means http://host:8080/mcp) (env PILOTHOUSE_SERVER; default: the serve running the data folder, else "+defaultServer+")")
	fs.StringVar(&c.token, "token", os.Getenv("PILOTHOUSE_TOKEN"), "bearer token (env PILOTHOUSE_TOKEN; default: the local token of the data folder's serve)")
	fs.StringVar(&c.data, "data", os.Getenv("PILOTHOUSE_DATA"), "data folder whose running serve to use when no --server is given (env PILOTHOUSE_DATA)")
}

// resolve fills in the server and token from the data folder's server.json
// when the flags and environment did not give them. A server given as the
// house's address (http://host:8080, host:8080) means its MCP endpoint,
// and one that is the data folder's serve gets its local token unless a
// token was given.
func (c *conn) resolve() {
	if c.server != "" {
		c.server = mcpEndpoint(c.server)
	}
	cfg := &Config{DataDir: c.data}
	resolveDataDir(cfg)
	ep, err := readEndpoint(cfg.DataDir)
	announced := err == nil && ep.MCP != ""
	switch {
	case c.server == "" && announced:
		c.server = ep.MCP
	case c.server == "":
		c.server, c.guessed, c.dataDir = defaultServer, true, cfg.DataDir
	case !announced || !sameEndpoint(c.server, ep.MCP):
		return // another server: the local token is not for it
	}
	if c.token == "" && announced {
		c.token = ep.Token
	}
}

// mcpEndpoint completes a server address to its MCP endpoint URL: http://
// when it names no scheme, /mcp when it names no path.
func mcpEndpoint(s string) string {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return s
	}
	u.Path = "/mcp"
	return u.String()
}

// sameEndpoint reports whether two MCP URLs name the same endpoint, a
// loopback host written as localhost or 127.0.0.1 alike.
func sameEndpoint(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	host := func(u *url.URL) string {
		if h := u.Hostname(); h == "localhost" || h == "::1" {
			return "127.0.0.1:" + u.Port()
		}
		return u.Host
	}
	return ua.Scheme == ub.Scheme && host(ua) == host(ub) && strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}

func (c *conn) dial(ctx context.Context) (*pilotclient.Client, error) {
	c.resolve()
	cl, err := pilotclient.Dial(ctx, pilotclient.Options{URL: c.server, Token: c.token, Name: "pilothouse-cli", Version: "1"})
	return cl, c.unreachable(err)
}

// unreachable replaces a transport error chain by what to do when nothing
// answers at the server's address.
func (c *conn) unreachable(err error) error {
	var dnsErr *net.DNSError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dnsErr) {
		msg := fmt.Sprintf("no pilothouse serve answers at %s; start it with `pilothouse serve` (or give --server)", c.server)
		if c.guessed {
			msg += fmt.Sprintf(". A serve started with --data DIR (or another --addr) announces itself in DIR/server.json: give the same --data DIR here (or PILOTHOUSE_DATA); none was announced in %s", c.dataDir)
		}
		return errors.New(msg)
	}
	return err
}

// apiTimeout bounds one house API request.
const apiTimeout = 10 * time.Second

// api calls the house API beside the MCP endpoint: GET with query, or POST
// of body as JSON; it decodes the answer into out, or returns the server's
// error in its words.
func (c *conn) api(ctx context.Context, method, path string, query url.Values, body, out any) error {
	c.resolve()
	u := strings.TrimSuffix(strings.TrimSuffix(c.server, "/"), "/mcp") + apiPrefix + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	return decodeAPI(resp, out)
}

// maxAPIAnswer bounds what the command line reads of one answer.
const maxAPIAnswer = 8 << 20

func decodeAPI(resp *http.Response, out any) error {
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("%s answered %s without the house API (%s): is it an older pilothouse?", resp.Request.URL.Host, resp.Status, resp.Request.URL.Path)
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxAPIAnswer))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&e); err != nil || e.Error == "" {
			return fmt.Errorf("the server answered %s", resp.Status)
		}
		return errors.New(e.Error)
	}
	return dec.Decode(out)
}

// houseZone is the house's time zone as the server reports it, for the
// times the command line prints; the local zone if it cannot be had.
func (c *conn) houseZone(ctx context.Context) *time.Location {
	var h houseInfo
	if err := c.api(ctx, http.MethodGet, "house", nil, nil, &h); err != nil || h.TimeZone == "" {
		return time.Local
	}
	if loc, err := time.LoadLocation(h.TimeZone); err == nil {
		return loc
	}
	return time.FixedZone(h.TimeZone, h.UTCOffset)
}

// houseTime formats a time in the house's zone, with the zone's name.
func houseTime(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}
