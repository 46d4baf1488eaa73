package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/storage"
)

// TestActionUnderLockedStorageSaysSo: a rule action with the database
// locked by another program answered a bare 500 "The action failed." (MCP
// says resource_exhausted). The page is now 503 and says in words that
// storage is unavailable, why, and that nothing was changed; it answers
// within one busy timeout.
func TestActionUnderLockedStorageSaysSo(t *testing.T) {
	const busy = 500 * time.Millisecond
	dir := t.TempDir()
	f := newFixtureWith(t, testPrincipals(), dir, storage.Options{BusyTimeout: busy})
	f.deploy(nil, motionRule)
	c := f.client()
	c.login(ownerTok)
	tok := c.csrf("/rules/hall-motion-light")

	release := testhouse.LockDatabase(t, dir)
	for _, action := range []string{"disable", "remove"} {
		t0 := time.Now()
		code, body, h := c.post("/rules/hall-motion-light/"+action, url.Values{"csrf": {tok}})
		d := time.Since(t0)
		if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
			t.Errorf("%s with the database locked: %d %s", action, code, body)
		}
		mustContain(t, action, body, "Storage is unavailable", "nothing was changed", "locked", "/healthz")
		if d > 3*busy {
			t.Errorf("%s took %v (busy timeout %v)", action, d, busy)
		}
	}
	release()
	code, body, _ := c.post("/rules/hall-motion-light/disable", url.Values{"csrf": {tok}})
	if code != http.StatusSeeOther {
		t.Fatalf("disable once the lock went: %d %s", code, body)
	}
	if _, page, _ := c.get("/rules/hall-motion-light"); !strings.Contains(page, "disabled") {
		t.Errorf("the rule is not disabled after the lock went")
	}
}
