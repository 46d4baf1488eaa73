package mcpserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine/mcpserver"
)

// TestDeclaredBodyLengthCostsNothing: an attacker round opened 500 slow
// requests each declaring a 1 MB body and sending a byte now and then;
// the server held about 440 MB, as BoundBody sized its buffer by the
// declared length. What a request holds now grows with what it sent.
func TestDeclaredBodyLengthCostsNothing(t *testing.T) {
	g := mcpserver.NewGuard(mcpserver.GuardOptions{MaxBodyBytes: 1 << 20})
	const n = 50
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		r := httptest.NewRequest(http.MethodPost, "/mcp", io.NopCloser(strings.NewReader(`{"a":1}`)))
		r.ContentLength = 1 << 20 // declared, never sent: the reader ends early
		g.BoundBody(httptest.NewRecorder(), r)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 128<<10 {
		t.Errorf("a request declaring 1 MB and sending 7 bytes allocated %d bytes, want < 128 KiB", per)
	}
}
