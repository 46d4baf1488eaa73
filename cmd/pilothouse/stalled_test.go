package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestStalledReadersAreCut: a client that asks for a large response and
// takes nothing of it is disconnected within the write timeout, through
// MCP (a guest's 6 MB trace) and the web UI (the run's JSON) alike; the
// served-run room it held comes back while it still keeps its socket
// open, and the cut is counted on /healthz (round 18: 200 such readers
// held the whole served-runs budget for 100+ s).
func TestStalledReadersAreCut(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	cfg.writeTimeout = time.Second
	a := startTestApp(t, cfg)
	guest := mcpClientWith(t, a.URL()+"/mcp", "guest-token", nil)
	runID := bigGuestRun(t, guest)
	cookie := webSession(t, a.URL(), "guest-token")
	cases := []struct {
		name  string
		stall func() net.Conn
	}{
		{"MCP pilotage_trace", func() net.Conn {
			return stalledTrace(t, a.ln.Addr().String(), guest.GetTransport().(*transport.StreamableHTTP).GetSessionId(), runID)
		}},
		{"web run JSON", func() net.Conn {
			return stalledGet(t, a.ln.Addr().String(), "/runs/"+runID+"/json", cookie)
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := c.stall()
			testutil.Eventually(t, 10*time.Second, "the stalled read holding its run", func() bool {
				return servedHealth(t, a.URL()).InFlightBytes > 0
			})
			testutil.Eventually(t, 15*time.Second, "the run's room given back while the reader stays", func() bool {
				return servedHealth(t, a.URL()).InFlightBytes == 0
			})
			if n := responsesCut(t, a.URL()); n != i+1 {
				t.Errorf("/healthz http.responses_cut = %d, want %d", n, i+1)
			}
			// The server closed the connection: what it had sent ends.
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := io.Copy(io.Discard, conn)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the stalled connection is still open: %v", err)
			}
		})
	}
}

// TestStreamsOutliveTheWriteTimeout: a live-update stream that is read
// stays open past the write timeout however long it is idle, and gets
// the next change: the deadline counts from each write.
func TestStreamsOutliveTheWriteTimeout(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	cfg.writeTimeout = 300 * time.Millisecond
	a := startTestApp(t, cfg)
	cookie := webSession(t, a.URL(), "guest-token")
	req, _ := http.NewRequest(http.MethodGet, a.URL()+"/events?devices=1", nil)
	req.Header.Set("Cookie", strings.TrimSuffix(strings.TrimPrefix(cookie, "Cookie: "), "\r\n"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/events: %d", resp.StatusCode)
	}
	got := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			got <- sc.Text()
		}
		close(got)
	}()
	// Idle for several write timeouts, then a change.
	time.Sleep(4 * cfg.writeTimeout)
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-got:
			if !ok {
				t.Fatal("the stream ended before the change arrived")
			}
			if strings.Contains(l, `"id":"hall_motion.occupancy"`) {
				return
			}
		case <-deadline:
			t.Fatal("no live update 10 s after the change")
		}
	}
}

// webSession logs in to the web UI with token and returns its session
// cookie as a request header line.
func webSession(t *testing.T, base, token string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.PostForm(base+"/login", url.Values{"token": {token}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(base)
	line := ""
	for _, c := range jar.Cookies(u) {
		line += c.Name + "=" + c.Value + "; "
	}
	if line == "" {
		t.Fatalf("no session cookie after logging in: %d", resp.StatusCode)
	}
	return "Cookie: " + line + "\r\n"
}

// stalledGet sends GET path over a socket with a tiny receive buffer and
// never reads the answer.
func stalledGet(t *testing.T, addr, path, header string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path, header); err != nil {
		t.Fatal(err)
	}
	return c
}

func responsesCut(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		HTTP struct {
			ResponsesCut int `json:"responses_cut"`
		} `json:"http"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.HTTP.ResponsesCut
}
