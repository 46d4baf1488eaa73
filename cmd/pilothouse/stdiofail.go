package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/stdiobridge"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/rules"
)

// stdioFailed tells the MCP client on the other end of stdin/stdout why
// pilothouse stdio could not start, in words, instead of leaving it with a
// closed connection: every request is answered with a JSON-RPC error whose
// message is the failure, until the client has sent initialize (it then
// knows), stdin ends, or a minute passes. It returns err, for stderr and
// the exit status.
func stdioFailed(ctx context.Context, in io.Reader, out io.Writer, err error) error {
	msg := "pilothouse could not start: " + err.Error()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// Bounded like every request (the configuration may be what failed).
	lines := stdiobridge.ReadLines(ctx, mcpserver.LimitLines(in, rules.DefaultLimits.MaxRequestBytes, slog.New(slog.DiscardHandler)))
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return err
			}
			var m stdiobridge.Msg
			if json.Unmarshal(line, &m) != nil || !m.IsRequest() {
				continue
			}
			if _, werr := out.Write(append(stdiobridge.ErrorResponse(m.ID, mcp.INTERNAL_ERROR, msg), '\n')); werr != nil {
				return err
			}
			if m.Method == string(mcp.MethodInitialize) {
				return err
			}
		case <-ctx.Done():
			return err
		}
	}
}
