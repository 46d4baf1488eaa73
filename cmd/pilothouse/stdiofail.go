package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/rules"
)

// readLines sends the non-empty lines of in until it ends or ctx is done;
// in must bound its lines (mcpserver.LimitLines).
func readLines(ctx context.Context, in io.Reader) <-chan []byte {
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
	lines := readLines(ctx, mcpserver.LimitLines(in, rules.DefaultLimits.MaxRequestBytes, slog.New(slog.DiscardHandler)))
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return err
			}
			var m rpcMsg
			if json.Unmarshal(line, &m) != nil || !m.isRequest() {
				continue
			}
			if _, werr := out.Write(append(errorResponse(m.ID, mcp.INTERNAL_ERROR, msg), '\n')); werr != nil {
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
