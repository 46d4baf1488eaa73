package stdiobridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// bridgeRig runs the bridge between pipes and an mcp-go streamable HTTP
// server whose "shout" tool notifies the caller during the call, and
// records the HTTP methods the server sees.
type bridgeRig struct {
	srv     *server.MCPServer
	in      *io.PipeWriter
	out     *bufio.Reader
	done    chan struct{}
	mu      sync.Mutex
	methods []string
	tokens  []string
}

func newBridgeRig(t *testing.T) *bridgeRig {
	t.Helper()
	mcpSrv := server.NewMCPServer("rig", "1", server.WithToolCapabilities(false))
	mcpSrv.AddTool(mcp.NewTool("shout"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": "p", "progress": 1})
		return mcp.NewToolResultText("shouted"), nil
	})
	r := &bridgeRig{srv: mcpSrv, done: make(chan struct{})}
	h := server.NewStreamableHTTPServer(mcpSrv)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.methods = append(r.methods, req.Method)
		r.tokens = append(r.tokens, req.Header.Get("Authorization"))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(hs.Close)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r.in, r.out = inW, bufio.NewReader(outR)
	go func() {
		defer close(r.done)
		_ = Run(context.Background(), hs.URL+"/mcp", "local", inR, outW, slog.New(slog.DiscardHandler), 0)
		_ = outW.Close()
	}()
	t.Cleanup(func() { _ = r.in.Close(); <-r.done }) // before the server closes
	return r
}

func (r *bridgeRig) saw(method string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Contains(strings.Join(r.methods, ","), method)
}

func (r *bridgeRig) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(r.in, msg+"\n"); err != nil {
		t.Fatal(err)
	}
}

// until reads lines until one contains want, returning all read.
func (r *bridgeRig) until(t *testing.T, want string) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var lines []string
		for {
			l, err := r.out.ReadString('\n')
			if err != nil {
				got <- lines
				return
			}
			if lines = append(lines, strings.TrimSpace(l)); strings.Contains(l, want) {
				got <- lines
				return
			}
		}
	}()
	select {
	case lines := <-got:
		if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], want) {
			t.Fatalf("the bridge ended without %q: %v", want, lines)
		}
		return lines
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q from the bridge within 10s", want)
	}
	return nil
}

// TestBridgeRelaysSessionsAndNotifications: the bridge keeps the session
// of initialize, relays a notification sent during a call and one the
// server sends on its own (GET stream), one JSON message per line,
// sends the house's token, and ends the session when stdin closes.
func TestBridgeRelaysSessionsAndNotifications(t *testing.T) {
	r := newBridgeRig(t)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r.until(t, `"id":1`)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shout","arguments":{},"_meta":{"progressToken":"p"}}}`)
	lines := r.until(t, "shouted")
	if !strings.Contains(strings.Join(lines, "\n"), "notifications/progress") {
		// mcp-go may send it on the GET stream instead of the call's.
		lines = append(lines, r.until(t, "notifications/progress")...)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not one JSON message per line: %q", l)
		}
	}
	// What the server sends on its own goes through the GET stream.
	testutil.Eventually(t, 10*time.Second, "the GET stream", func() bool { return r.saw(http.MethodGet) })
	r.srv.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "to everyone"})
	r.until(t, "to everyone")
	_ = r.in.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the bridge did not end with stdin")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.methods[len(r.methods)-1] != http.MethodDelete {
		t.Errorf("HTTP methods %v: want a closing DELETE", r.methods)
	}
	for _, tok := range r.tokens {
		if tok != "Bearer local" {
			t.Errorf("a request without the house token: %q", tok)
		}
	}
}

// TestBridgeSaysWhenTheServerIsGone: a request to a server that stopped
// is answered with an error in words, with the request's id.
func TestBridgeSaysWhenTheServerIsGone(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL + "/mcp"
	hs.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = Run(context.Background(), url, "", inR, outW, slog.New(slog.DiscardHandler), 0)
		_ = outW.Close()
	}()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`+"\n")
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	_ = inW.Close()
	var resp struct {
		ID    string `json:"id"`
		Error struct{ Message string }
	}
	if json.Unmarshal([]byte(line), &resp) != nil || resp.ID != "a" || !strings.Contains(resp.Error.Message, "did not answer") {
		t.Fatalf("answer: %s", line)
	}
}

func TestReadSSE(t *testing.T) {
	var got []string
	readSSE(strings.NewReader("event: message\ndata: {\"a\":\ndata: 1}\n\n: comment\nevent: ping\ndata: x\n\nid: 3\ndata: {\"b\":2}\r\n\r\n"),
		func(d []byte) { got = append(got, string(d)) })
	if strings.Join(got, "|") != "{\"a\":\n1}|{\"b\":2}" {
		t.Fatalf("events: %q", got)
	}
}

// TestBridgeRequestTimeout: a request the server sends nothing about for
// the timeout (a frozen serve) is answered with a JSON-RPC timeout error
// carrying its id, while the next request still works; a long call whose
// server keeps sending progress is not cut.
func TestBridgeRequestTimeout(t *testing.T) {
	const timeout = 400 * time.Millisecond
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m Msg
		_ = json.Unmarshal(b, &m)
		w.Header().Set("Content-Type", "text/event-stream")
		switch m.Method {
		case "freeze":
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		case "progress": // ten messages 150 ms apart: 1.5 s in all, each gap under the timeout
			for i := range 10 {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":%d}}\n\n", i)
				w.(http.Flusher).Flush()
				time.Sleep(150 * time.Millisecond) // the slow server being simulated
			}
		}
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"done\":%q}}\n\n", m.ID, m.Method)
	}))
	defer hs.Close()
	defer close(release)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = Run(context.Background(), hs.URL+"/mcp", "", inR, outW, slog.New(slog.DiscardHandler), timeout)
		_ = outW.Close()
	}()
	defer inW.Close()
	out := bufio.NewReader(outR)
	read := func() map[string]any {
		t.Helper()
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return m
	}
	send := func(s string) {
		go func() { _, _ = io.WriteString(inW, s+"\n") }()
	}
	t0 := time.Now()
	send(`{"jsonrpc":"2.0","id":"f","method":"freeze"}`)
	m := read()
	e, _ := m["error"].(map[string]any)
	if m["id"] != "f" || e["code"] != float64(RequestTimeoutCode) || !strings.Contains(fmt.Sprint(e["message"]), "sent no answer within 400ms (stdio_request_timeout)") {
		t.Fatalf("a frozen request: %v", m)
	}
	if d := time.Since(t0); d > 10*timeout {
		t.Fatalf("the timeout error came after %v", d)
	}
	send(`{"jsonrpc":"2.0","id":"p","method":"progress"}`)
	for i := 0; ; i++ {
		m := read()
		if m["id"] == "p" {
			if r, _ := m["result"].(map[string]any); r["done"] != "progress" || i != 10 {
				t.Fatalf("the long call's answer after %d progress messages: %v", i, m)
			}
			break
		}
		if m["method"] != "notifications/progress" {
			t.Fatalf("during the long call: %v", m)
		}
	}
}
