// Package stdiobridge relays MCP between a stdio client and the streamable
// HTTP endpoint of the serve that runs the house (pilothouse stdio).
package stdiobridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// bridge relays MCP between a stdio client and the streamable HTTP endpoint
// of the serve that runs this house, so a desktop assistant that launches
// "pilothouse stdio" talks to the running engine instead of starting a
// second one. Every JSON-RPC line read from stdin is POSTed as it is; what
// comes back (a JSON body, or each message of an SSE stream, in order) is
// written to stdout one message per line. After initialize, a GET stream
// carries what the server sends on its own. The session id and the
// negotiated protocol version travel in headers the way the transport
// requires, for the 2026-07-28 stateless core as for earlier revisions.
type bridge struct {
	ctx           context.Context // ends when the client leaves
	mcpURL, token string
	hc            *http.Client
	log           *slog.Logger
	// timeout bounds the wait for the server's next message about a
	// request (0: none).
	timeout time.Duration

	outMu sync.Mutex
	out   io.Writer

	mu        sync.Mutex
	session   string
	version   string // negotiated by initialize (before 2026-07-28)
	listening bool

	inflight sync.WaitGroup
}

// Msg is what the bridge (and stdio failing to start) reads of a JSON-RPC
// message to route it.
type Msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// IsRequest reports whether m expects an answer.
func (m *Msg) IsRequest() bool {
	return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null"
}

// runBridge relays until stdin ends or ctx is done; a request the server
// sends nothing about for timeout is answered with an error.
func Run(ctx context.Context, mcpURL, token string, in io.Reader, out io.Writer, log *slog.Logger, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &bridge{ctx: ctx, mcpURL: mcpURL, token: token, hc: &http.Client{}, log: log, out: out, timeout: timeout}
	lines := ReadLines(ctx, in)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				b.finish(cancel)
				return nil
			}
			b.dispatch(ctx, line)
		case <-ctx.Done():
			b.finish(cancel)
			return nil
		}
	}
}

// dispatch forwards one message. The messages that open a connection
// (initialize, server/discover) are forwarded before the next line is
// read, so what follows carries their session; the rest run concurrently,
// as a client may send a ping or a cancellation while a call runs.
func (b *bridge) dispatch(ctx context.Context, line []byte) {
	var m Msg
	_ = json.Unmarshal(line, &m) // a batch or a malformed line goes as it is
	if m.Method == string(mcp.MethodInitialize) || m.Method == string(mcp.MethodServerDiscover) {
		b.forward(ctx, line, &m)
		return
	}
	b.inflight.Add(1)
	go func() {
		defer b.inflight.Done()
		b.forward(ctx, line, &m)
	}()
}

// finish lets the requests in flight answer (for a while), stops the GET
// stream and ends the session.
func (b *bridge) finish(cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { b.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.log.Warn("bridge: requests still running when the client left; dropping them")
	}
	cancel()
	session, _ := b.state()
	if session == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.mcpURL, nil)
	if err != nil {
		return
	}
	b.auth(req)
	req.Header.Set(mcp.HeaderSessionID, session)
	if resp, err := b.hc.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

func (b *bridge) state() (session, version string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session, b.version
}

func (b *bridge) auth(req *http.Request) {
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
}

// headers sets what the transport needs beside the body and returns the
// session id sent ("" = none).
func (b *bridge) headers(req *http.Request, m *Msg) string {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	b.auth(req)
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	session, version := b.state()
	if v := p.Meta.ProtocolVersion(); v != "" {
		version = v
	}
	if version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, version)
	}
	if mcp.IsModernProtocol(version) {
		if m.Method != "" {
			for k, v := range mcp.StandardHeaders(version, mcp.MCPMethod(m.Method), m.Params) {
				req.Header.Set(k, v)
			}
		}
		return ""
	}
	if session != "" {
		req.Header.Set(mcp.HeaderSessionID, session)
	}
	return session
}

// RequestTimeoutCode is the JSON-RPC error code of a request the server
// did not answer in time (the code MCP's SDKs use for their own timeout).
const RequestTimeoutCode = -32001

// errNoAnswer ends a forwarded request that waited too long.
var errNoAnswer = errors.New("no answer in time")

// deadline bounds a forwarded message by the request timeout, restarted by
// every message the server sends for it (alive), so a frozen server is told
// to the client while a long call that reports progress goes on. A
// subscriptions/listen request holds its answer open like a stream and is
// not bounded.
func (b *bridge) deadline(ctx context.Context, m *Msg) (context.Context, func(), func()) {
	if b.timeout <= 0 || m.Method == string(mcp.MethodSubscriptionsListen) {
		return ctx, func() {}, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(b.timeout, func() { cancel(errNoAnswer) })
	return ctx, func() { t.Stop(); cancel(nil) }, func() { t.Reset(b.timeout) }
}

// forward POSTs one message and relays the answer.
func (b *bridge) forward(ctx context.Context, line []byte, m *Msg) {
	ctx, done, alive := b.deadline(ctx, m)
	defer done()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.mcpURL, bytes.NewReader(line))
	if err != nil {
		b.fail(m, err.Error())
		return
	}
	sent := b.headers(req, m)
	resp, err := b.hc.Do(req)
	if err == nil {
		defer resp.Body.Close()
		if b.answer(resp, m, sent, alive) {
			return
		}
	}
	switch {
	case errors.Is(context.Cause(ctx), errNoAnswer):
		b.failCode(m, RequestTimeoutCode, fmt.Sprintf("the Pilothouse server at %s sent no answer within %v (stdio_request_timeout): "+
			"it is busy or frozen; the request may still complete there", b.mcpURL, b.timeout))
	case ctx.Err() != nil: // the client left
	case err != nil:
		b.fail(m, fmt.Sprintf("the Pilothouse server at %s did not answer (%v); is it still running?", b.mcpURL, err))
	default:
		b.fail(m, fmt.Sprintf("reading the answer of %s: the answer ended early", b.mcpURL))
	}
}

// answer relays the server's answer to m and reports whether it is
// complete (false: reading it failed or ended before the response).
func (b *bridge) answer(resp *http.Response, m *Msg, sent string, alive func()) bool {
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return true
	case resp.StatusCode == http.StatusNotFound && sent != "":
		b.fail(m, fmt.Sprintf("the Pilothouse server at %s no longer knows this session (it restarted?): reconnect", b.mcpURL))
		return true
	case resp.StatusCode != http.StatusOK:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var probe struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if json.Unmarshal(body, &probe) == nil && probe.JSONRPC != "" {
			b.relay(body, m, resp.Header)
			return true
		}
		b.fail(m, fmt.Sprintf("the Pilothouse server at %s answered %s: %s", b.mcpURL, resp.Status, strings.TrimSpace(string(body))))
		return true
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		answered := !m.IsRequest()
		readSSE(resp.Body, func(data []byte) {
			alive()
			answered = b.relay(data, m, resp.Header) || answered
		})
		return answered
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false
	}
	if len(bytes.TrimSpace(body)) > 0 {
		b.relay(body, m, resp.Header)
	}
	return true
}

// relay writes one message from the server, noting what initialize
// negotiated when msg is its answer, and reports whether msg answers req.
func (b *bridge) relay(msg []byte, req *Msg, h http.Header) bool {
	var ans Msg
	answers := json.Unmarshal(msg, &ans) == nil && ans.Method == "" && len(req.ID) > 0 && bytes.Equal(ans.ID, req.ID)
	if answers && req.Method == string(mcp.MethodInitialize) && len(ans.Result) > 0 {
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(ans.Result, &res)
		b.initialized(h.Get(mcp.HeaderSessionID), res.ProtocolVersion)
	}
	b.write(msg)
	return answers
}

// initialized records the session and starts the GET stream once.
func (b *bridge) initialized(session, version string) {
	b.mu.Lock()
	b.session, b.version = session, version
	start := session != "" && !b.listening
	b.listening = b.listening || start
	b.mu.Unlock()
	if start {
		go b.listen(session)
	}
}

// listen relays the server's own messages on the session's GET stream,
// reconnecting while the session lasts.
func (b *bridge) listen(session string) {
	for b.ctx.Err() == nil {
		if s, _ := b.state(); s != session {
			return
		}
		req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, b.mcpURL, nil)
		if err != nil {
			return
		}
		b.auth(req)
		_, version := b.state()
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(mcp.HeaderSessionID, session)
		if version != "" {
			req.Header.Set(mcp.HeaderProtocolVersion, version)
		}
		resp, err := b.hc.Do(req)
		if err != nil {
			return
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			return // no stream offered (405) or the session is gone
		}
		readSSE(resp.Body, func(data []byte) { b.write(data) })
		_ = resp.Body.Close()
		select { // the server closed the stream: reconnect, not in a spin
		case <-b.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// fail answers a request with a JSON-RPC error saying what went wrong (a
// notification or a response has no one to tell but the log).
func (b *bridge) fail(m *Msg, msg string) { b.failCode(m, mcp.INTERNAL_ERROR, msg) }

func (b *bridge) failCode(m *Msg, code int, msg string) {
	b.log.Warn("bridge: " + msg)
	if m.IsRequest() {
		b.write(ErrorResponse(m.ID, code, msg))
	}
}

// write puts one message on stdout, on one line.
func (b *bridge) write(msg []byte) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, msg); err != nil {
		b.log.Warn("bridge: dropping a message that is not JSON", "err", err)
		return
	}
	buf.WriteByte('\n')
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if _, err := b.out.Write(buf.Bytes()); err != nil {
		b.log.Debug("bridge: writing to the client", "err", err)
	}
}

// errorResponse is a JSON-RPC error answering id.
func ErrorResponse(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return b
}

// readSSE calls each with the data of every message event of an SSE
// stream until it ends.
func readSSE(r io.Reader, each func(data []byte)) {
	br := bufio.NewReader(r)
	var data bytes.Buffer
	event := ""
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data.Len() > 0 && (event == "" || event == "message") {
				each(append([]byte(nil), data.Bytes()...))
			}
			data.Reset()
			event = ""
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(line[len("data:"):], []byte(" ")))
		case bytes.HasPrefix(line, []byte("event:")):
			event = string(bytes.TrimSpace(line[len("event:"):]))
		}
		if err != nil {
			return
		}
	}
}

// ReadLines sends the non-empty lines of in until it ends or ctx is done;
// in must bound its lines (mcpserver.LimitLines).
func ReadLines(ctx context.Context, in io.Reader) <-chan []byte {
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if line = bytes.TrimSpace(line); len(line) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}
