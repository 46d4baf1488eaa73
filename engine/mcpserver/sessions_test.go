package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// mcpHTTP is a raw client of the /mcp endpoint (one keep-alive pool).
type mcpHTTP struct {
	t   *testing.T
	url string
	hc  *http.Client
}

func newMCPHTTP(t *testing.T, url string) *mcpHTTP {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	// A response that streams (a listen request past no bound) must not
	// hang the test.
	return &mcpHTTP{t: t, url: url, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// post sends one JSON-RPC message and returns the status, the session id
// the server set and the body.
func (c *mcpHTTP) post(token, session, msg string, header ...string) (int, string, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(msg))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "", "(an event stream)"
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const initMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

const pingMsg = `{"jsonrpc":"2.0","id":2,"method":"ping"}`

// initialize opens a session and returns its id.
func (c *mcpHTTP) initialize(token string) string {
	c.t.Helper()
	code, id, body := c.post(token, "", initMsg)
	if code != http.StatusOK || id == "" {
		c.t.Fatalf("initialize: %d %q %s", code, id, body)
	}
	return id
}

// stream opens GET /mcp; the response is open until cancel.
func (c *mcpHTTP) stream(token, session string) (*http.Response, context.CancelFunc) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := c.hc.Transport.RoundTrip(req)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp, func() { cancel(); resp.Body.Close() }
}

func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestInitializeFloodKeepsSessionsBounded: every initialize used to keep
// a session (~9 KB) forever, so 20,000 of them held 196 MB. A principal
// now holds at most max_sessions_per_principal sessions: each initialize
// past it ends the least recently used one (404 on its next request, so
// the client initializes again), and the live heap stays flat.
func TestInitializeFloodKeepsSessionsBounded(t *testing.T) {
	s := newHTTPStack(t, nil, storage.Options{})
	c := newMCPHTTP(t, s.url)
	c.initialize("") // warm up pools and caches
	before := heapAfterGC()
	const n = 3000
	ids := make([]string, 0, n)
	for range n {
		ids = append(ids, c.initialize(""))
	}
	grown := int64(heapAfterGC()) - int64(before)
	per := rules.DefaultLimits.MaxSessionsPerPrincipal
	t.Logf("%d initialize requests: live heap grew %d KB", n, grown>>10)
	if grown > 4<<20 {
		t.Errorf("%d initialize requests grew the live heap by %d KB: sessions are not bounded", n, grown>>10)
	}
	if got := s.srv.Sessions().Live; got != per {
		t.Errorf("live sessions %d, want the per-principal bound %d", got, per)
	}
	for i, id := range []string{ids[0], ids[n-per-1]} {
		if code, _, body := c.post("", id, pingMsg); code != http.StatusNotFound {
			t.Errorf("evicted session %d: %d %s (want 404: initialize again)", i, code, body)
		}
	}
	for _, id := range ids[n-per:] {
		if code, _, body := c.post("", id, pingMsg); code != http.StatusOK {
			t.Fatalf("one of the %d newest sessions: %d %s", per, code, body)
		}
	}
}

// TestIdleSessionsEnd: a session unused for limits.session_idle (and with
// no open stream) ends; its next request is 404 and says why.
func TestIdleSessionsEnd(t *testing.T) {
	lim := rules.DefaultLimits
	lim.SessionIdle = 200 * time.Millisecond
	s := newHTTPStackCfg(t, engine.Config{Limits: lim}, storage.Options{})
	c := newMCPHTTP(t, s.url)
	idle, streaming := c.initialize(""), c.initialize("")
	resp, _ := c.stream("", streaming)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	time.Sleep(3 * lim.SessionIdle) // let the idle bound pass
	if code, _, body := c.post("", idle, pingMsg); code != http.StatusNotFound || !strings.Contains(body, "session_idle") {
		t.Errorf("idle session: %d %s", code, body)
	}
	if code, _, body := c.post("", streaming, pingMsg); code != http.StatusOK {
		t.Errorf("a session with an open stream is not idle: %d %s", code, body)
	}
	if st := s.srv.Sessions(); st.Live != 1 || st.EndedIdle != 1 {
		t.Errorf("sessions: %+v", st)
	}
}

// TestSessionsTotalBound: past limits.max_sessions, initialize is refused
// with 503 and the reason.
func TestSessionsTotalBound(t *testing.T) {
	lim := rules.DefaultLimits
	lim.MaxSessions, lim.MaxSessionsPerPrincipal = 3, 2
	s := newHTTPStackCfg(t, engine.Config{Limits: lim, Principals: twoPrincipals()}, storage.Options{})
	c := newMCPHTTP(t, s.url)
	c.initialize("owner-token")
	c.initialize("owner-token")
	c.initialize("guest-token")
	code, _, body := c.post("guest-token", "", initMsg)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "limits.max_sessions") {
		t.Fatalf("initialize past max_sessions: %d %s", code, body)
	}
	if st := s.srv.Sessions(); st.Live != 3 || st.Refused != 1 {
		t.Errorf("sessions: %+v", st)
	}
}

// TestStreamsAreBounded: GET /mcp held 20,000 streams for anyone who sent
// any Mcp-Session-Id. A GET now needs a live session of the caller's own,
// refused cheaply otherwise; open streams are bounded per principal (429)
// and in all (503), with the reason; a stream ends with its session; and
// subscriptions/listen, the stream of protocol 2026-07-28, counts alike.
func TestStreamsAreBounded(t *testing.T) {
	lim := rules.DefaultLimits
	lim.MaxStreamsPerPrincipal, lim.MaxStreams = 3, 5
	s := newHTTPStackCfg(t, engine.Config{Limits: lim, Principals: twoPrincipals()}, storage.Options{})
	c := newMCPHTTP(t, s.url)
	guest := c.initialize("guest-token")

	for _, tc := range []struct {
		name, token, session string
		code                 int
	}{
		{"no session id", "guest-token", "", http.StatusBadRequest},
		{"an id never issued", "guest-token", "mcp-session-3b1f7e0c-0000-4000-8000-000000000000", http.StatusNotFound},
		{"another principal's session", "owner-token", guest, http.StatusNotFound},
	} {
		resp, closeIt := c.stream(tc.token, tc.session)
		if resp.StatusCode != tc.code {
			t.Errorf("GET with %s: %d, want %d", tc.name, resp.StatusCode, tc.code)
		}
		closeIt()
	}

	var closers []func()
	for i := range 3 {
		resp, cl := c.stream("guest-token", guest)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("guest stream %d: %d", i, resp.StatusCode)
		}
		closers = append(closers, cl)
	}
	if code, b := c.refusedStream("guest-token", guest); code != http.StatusTooManyRequests || !strings.Contains(b, "max_streams_per_principal") {
		t.Fatalf("4th guest stream: %d %s", code, b)
	}
	code, _, body := c.post("guest-token", "", listenMsg, "Mcp-Protocol-Version", "2026-07-28")
	if code != http.StatusTooManyRequests {
		t.Errorf("subscriptions/listen past the guest's bound: %d %s", code, body)
	}
	owner := c.initialize("owner-token")
	for i := range 2 {
		if resp, _ := c.stream("owner-token", owner); resp.StatusCode != http.StatusOK {
			t.Fatalf("owner stream %d: %d", i, resp.StatusCode)
		}
	}
	if code, b := c.refusedStream("owner-token", owner); code != http.StatusServiceUnavailable || !strings.Contains(b, "limits.max_streams") {
		t.Fatalf("stream past max_streams: %d %s", code, b)
	}

	closers[0]()
	c.streamSoon("guest-token", guest, "a closed stream's slot")
	// Ending the session (DELETE) ends its streams and frees their slots.
	if code := c.delete("guest-token", guest); code != http.StatusOK {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _, _ := c.post("guest-token", guest, pingMsg); code != http.StatusNotFound {
		t.Errorf("request on the deleted session: %d", code)
	}
	g2 := c.initialize("guest-token")
	for range 3 {
		c.streamSoon("guest-token", g2, "the ended session's stream slots")
	}
}

// refusedStream opens a stream expected to be refused: its status and
// body (none when it was not refused).
func (c *mcpHTTP) refusedStream(token, session string) (int, string) {
	resp, cl := c.stream(token, session)
	defer cl()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// streamSoon opens a stream, retrying while a slot is still being freed.
func (c *mcpHTTP) streamSoon(token, session, what string) {
	c.t.Helper()
	testutil.Eventually(c.t, 5*time.Second, what, func() bool {
		resp, cl := c.stream(token, session)
		if resp.StatusCode != http.StatusOK {
			cl()
			return false
		}
		return true
	})
}

const listenMsg = `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

func (c *mcpHTTP) delete(token, session string) int {
	req, _ := http.NewRequest(http.MethodDelete, c.url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func twoPrincipals() []*engine.Principal {
	return []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token")},
	}
}
