package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine/mcpserver"
)

// healthDoc is the /healthz document as the flood test reads it.
type healthDoc struct {
	Status   string                  `json:"status"`
	HTTP     *mcpserver.HTTPStats    `json:"http"`
	Sessions *mcpserver.SessionStats `json:"mcp_sessions"`
}

// healthz fetches /healthz on a connection of its own and says how long it
// took.
func healthz(t *testing.T, base string) (healthDoc, time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	resp, err := hc.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz under the flood: %v", err)
	}
	defer resp.Body.Close()
	var h healthDoc
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h, time.Since(t0)
}

// TestFloodKeepsHealthzResponsive: 20,000 held GET /mcp streams (any
// Mcp-Session-Id) took every descriptor and /healthz answered in 59 s. A
// GET for a session the caller does not hold is now refused at once;
// connections past limits.max_connections close the longest-waiting idle
// or silent one; /healthz answers quickly throughout and counts what was
// refused.
func TestFloodKeepsHealthzResponsive(t *testing.T) {
	cfg := testConfig(t)
	cfg.Limits.MaxConnections = 100
	a := startTestApp(t, cfg)
	addr := a.ln.Addr().String()

	var conns []net.Conn
	var mu sync.Mutex
	var served atomic.Int64 // flood GETs answered 200 (a held stream)
	var wg sync.WaitGroup
	for i := range 600 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return // the kernel's backlog: fine, the server is not holding it
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if i%2 == 0 {
				return // a silent connection
			}
			fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: mcp-session-%032x\r\n\r\n", addr, i)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if line, err := bufio.NewReader(c).ReadString('\n'); err == nil && strings.Contains(line, " 200 ") {
				served.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	if n := served.Load(); n > 0 {
		t.Errorf("%d GET /mcp with a session id nobody was issued were served a stream", n)
	}
	var worst time.Duration
	var h healthDoc
	for range 10 {
		var d time.Duration
		h, d = healthz(t, a.URL())
		worst = max(worst, d)
	}
	t.Logf("flood of 600 connections: /healthz worst %v; %+v %+v", worst, h.HTTP, h.Sessions)
	if worst > 2*time.Second {
		t.Errorf("/healthz took %v under the flood", worst)
	}
	if h.HTTP == nil || h.Sessions == nil {
		t.Fatalf("/healthz says nothing of connections, streams and sessions: %+v", h)
	}
	if h.HTTP.Connections > cfg.Limits.MaxConnections || h.HTTP.ConnectionsClosed == 0 || h.HTTP.Streams != 0 {
		t.Errorf("connections: %+v (max %d)", h.HTTP, cfg.Limits.MaxConnections)
	}
}
