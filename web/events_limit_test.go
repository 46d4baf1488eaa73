package web

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/rules"
)

// TestEventStreamsAreBounded: 3,000 /events streams of one guest held
// 3,020 descriptors and half a core. A principal may hold
// limits.max_streams_per_principal streams (shared with GET /mcp); past
// it, 429 with the reason, while another principal still gets its own.
func TestEventStreamsAreBounded(t *testing.T) {
	f := newFixture(t, testPrincipals())
	guest, owner := f.client(), f.client()
	guest.login(guestTok)
	owner.login(ownerTok)
	per := rules.DefaultLimits.MaxStreamsPerPrincipal
	for range per {
		openStream(t, guest)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, guest.base+"/events?deploys=1&devices=1", nil)
	resp, err := guest.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("stream %d of one principal was served", per+1)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "max_streams_per_principal") {
		t.Fatalf("stream %d: %d %s", per+1, resp.StatusCode, b)
	}
	openStream(t, owner)
}
