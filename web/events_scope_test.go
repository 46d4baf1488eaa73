package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// openStream opens /events for a logged-in client and returns its lines.
func openStream(t *testing.T, c *client) <-chan string {
	t.Helper()
	return openStreamAt(t, c, "/events")
}

// openStreamAt opens the event stream at path (with its query).
func openStreamAt(t *testing.T, c *client, path string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events: %d %q", resp.StatusCode, ct)
	}
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	testutil.Eventually(t, 5*time.Second, "the stream to open", func() bool { return len(lines) > 0 }) // "retry:"
	return lines
}

// until reads lines up to and including the first data line containing
// sentinel, and returns the data lines read.
func until(t *testing.T, lines <-chan string, sentinel string) []string {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended before %q; read %v", sentinel, got)
			}
			if !strings.HasPrefix(l, "data: ") {
				continue
			}
			got = append(got, l)
			if strings.Contains(l, sentinel) {
				return got
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %q; read %v", sentinel, got)
		}
	}
}

// TestStreamFollowsRuleOwner: a tenant's live stream announces its rule's
// firings; once the owner replaces the rule with a program the tenant may
// not see (it locks the front door), the tenant's stream — opened before
// the change — says nothing more about it: not the replacement, not its
// firings (the owner's runs), not its status changes. Scope is judged when
// an event is delivered, not when the stream subscribed.
func TestStreamFollowsRuleOwner(t *testing.T) {
	owner := &engine.Principal{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true}
	tenant := &engine.Principal{Name: "tenant", TokenHash: engine.HashToken(guestTok), Deploy: true,
		Scope: engine.Scope{DenyTypes: []string{"lock"}}}
	f := newFixture(t, []*engine.Principal{owner, tenant})
	f.deploy(tenant, motionRule)

	tc, oc := f.client(), f.client()
	tc.login(guestTok)
	oc.login(ownerTok)
	tenantLines, ownerLines := openStream(t, tc), openStream(t, oc)

	f.motion(true)
	until(t, tenantLines, `"rule":"hall-motion-light"`) // the tenant's own firing
	f.motion(false)

	if r, err := f.e.Execute(engine.WithPrincipal(context.Background(), owner), engine.ExecuteRequest{Program: json.RawMessage(`{"name": "hall-motion-light",
	  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
	  "steps": [{"id": "lock", "call": "front_lock.set", "args": {"state": "LOCK"}}]}`), Input: json.RawMessage(`{"install":{"replace":true}}`)}); err != nil || !r.Outcome.OK {
		t.Fatalf("replacing the tenant's rule: %v %+v", err, r)
	}
	f.motion(true)
	until(t, ownerLines, `"status":"success"`) // the owner's firing of the replacement
	if _, err := f.e.SetRuleEnabled(engine.WithPrincipal(context.Background(), owner), "hall-motion-light", false); err != nil {
		t.Fatal(err)
	}
	until(t, ownerLines, `"status":"disabled"`)

	// A sentinel the tenant does see, announced after all of the above.
	f.deploy(tenant, `{"name": "tenant-lux",
	  "triggers": [{"id": "lux", "state": "hall_motion.illuminance"}],
	  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]}`)
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"illuminance":77}`)})
	seen := until(t, tenantLines, `"rule":"tenant-lux","run_id"`)
	for _, l := range seen {
		if strings.Contains(l, "hall-motion-light") {
			t.Errorf("the tenant's stream announced the owner's rule: %s", l)
		}
	}
}

// TestStreamAnnouncesOnlyStoredFirings: a firing is announced on the live
// stream only once its run record is committed, so whatever a browser was
// told survives a kill -9. Each announced run is read from SQLite directly
// (no flush) the moment its announcement arrives.
func TestStreamAnnouncesOnlyStoredFirings(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	c := f.client()
	c.get("/")
	lines := openStream(t, c)
	runID := regexp.MustCompile(`"run_id":"([^"]+)"`)
	for i := 0; i < 5; i++ {
		f.motion(true)
		got := until(t, lines, `"rule":"hall-motion-light","run_id"`)
		m := runID.FindStringSubmatch(got[len(got)-1])
		if m == nil {
			t.Fatalf("no run id in %s", got[len(got)-1])
		}
		if _, err := f.store.GetRun(context.Background(), m[1]); err != nil {
			t.Fatalf("firing %d announced before it was stored: %v", i+1, err)
		}
		f.motion(false)
	}
}
