package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// bridge is a Zigbee2MQTT bridge/devices payload: a light, a motion
// sensor and a lock.
var bridge = testutil.Z2MBridge(testutil.Z2MLight("0x02", "hall_light"),
	testutil.Z2MMotion("0x03", "hall_motion"), testutil.Z2MLock("0x04", "front_lock"))

const motionRule = `{
  "name": "hall-motion-light",
  "description": "Hall light on when motion is seen",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON", "brightness": 180}}]
}`

const lockRule = `{
  "name": "night-lock",
  "triggers": [{"id": "night", "at": "23:00"}],
  "steps": [{"id": "lock", "call": "front_lock.set", "args": {"state": "LOCK"}}]
}`

type fixture struct {
	t     *testing.T
	e     *engine.Engine
	store *storage.Store
	devs  *devices.Catalog
	srv   *httptest.Server
}

var (
	ownerTok = "owner-secret"
	guestTok = "guest-secret"
)

func testPrincipals() []*engine.Principal {
	return []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true},
		{Name: "guest", TokenHash: engine.HashToken(guestTok), Scope: engine.Scope{DenyTypes: []string{"lock", "cover"}, DenyDevices: []string{"notify"}}},
	}
}

// tWriter logs the UI's log lines through the test.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newFixture starts a real engine on SQLite in a temp folder with a device
// catalog fed with bridge, and serves the UI on an httptest server.
func newFixture(t *testing.T, principals []*engine.Principal) *fixture {
	t.Helper()
	return newFixtureWith(t, principals, t.TempDir(), storage.Options{})
}

// newFixtureWith is newFixture on the data folder dir, storage opened with so.
func newFixtureWith(t *testing.T, principals []*engine.Principal, dir string, so storage.Options) *fixture {
	t.Helper()
	// The house's policy needs no approval: deploys set the scene here
	// (the approvals pages' tests give their requester its own policy).
	h := testhouse.RunHouse(t, testhouse.Options{Dir: dir, Storage: so, NoDemo: true,
		Devices: devices.Options{Notify: []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "pilothouse/notify/phone"}}},
		Engine:  engine.Config{Principals: principals, Approval: engine.ApprovalPolicy{Require: []string{}}},
		Seed: []mqtt.Message{{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(bridge)},
			{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"occupancy":false,"illuminance":12}`)}}})
	f := &fixture{t: t, e: h.Engine, store: h.Store, devs: h.Devices}
	f.srv = httptest.NewServer(Handler(h.Engine, Options{Principals: principals, Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))}))
	t.Cleanup(f.srv.Close)
	return f
}

// deploy installs a program as p (nil = owner) through the engine.
func (f *fixture) deploy(p *engine.Principal, program string) *engine.ExecuteResponse {
	f.t.Helper()
	ctx := context.Background()
	if p != nil {
		ctx = engine.WithPrincipal(ctx, p)
	}
	// Tests deploy versions of a rule one after the other: each replaces.
	resp, err := f.e.Execute(ctx, engine.ExecuteRequest{Program: json.RawMessage(program), Input: json.RawMessage(`{"install":{"replace":true}}`)})
	if err != nil || !resp.Outcome.OK {
		f.t.Fatalf("deploy: %v %+v", err, resp)
	}
	return resp
}

// darkOnlyFired deploys a rule whose condition (a dark hall) does not
// hold in the fixture's lit hall, sets off motion and returns the rule's
// firings once there is one.
func (f *fixture) darkOnlyFired() []storage.Run {
	f.t.Helper()
	f.deploy(nil, `{
  "name": "dark-only",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "conditions": [{"id": "dark", "expr": "state('hall_motion.illuminance') < 5"}],
  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]
}`)
	f.motion(true)
	var runs []storage.Run
	testutil.Eventually(f.t, 5*time.Second, "a firing", func() bool { runs = f.firings("dark-only"); return len(runs) > 0 })
	return runs
}

func (f *fixture) motion(on bool) {
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"occupancy":` + map[bool]string{true: "true", false: "false"}[on] + `}`)})
}

// firings returns the stored firings of rule, newest first.
func (f *fixture) firings(rule string) []storage.Run {
	f.e.Flush()
	runs, err := f.store.ListRuns(context.Background(), storage.RunFilter{Rule: rule, Kind: "firing"})
	if err != nil {
		f.t.Fatal(err)
	}
	return runs
}

// client is a browser stand-in: a cookie jar, no automatic redirects.
type client struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (f *fixture) client() *client {
	jar, _ := cookiejar.New(nil)
	// Generous: under -race on a loaded machine the largest pages take seconds.
	return &client{t: f.t, base: f.srv.URL, c: &http.Client{Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) do(req *http.Request) (int, string, http.Header) {
	c.t.Helper()
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (c *client) get(path string) (int, string, http.Header) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
	return c.do(req)
}

func (c *client) post(path string, form url.Values) (int, string, http.Header) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf loads path and returns the CSRF token of its forms.
func (c *client) csrf(path string) string {
	c.t.Helper()
	code, body, _ := c.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if code != 200 || m == nil {
		c.t.Fatalf("GET %s: %d, no csrf token in page", path, code)
	}
	return m[1]
}

func (c *client) login(token string) {
	c.t.Helper()
	code, _, h := c.post("/login", url.Values{"token": {token}, "next": {"/"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/" {
		c.t.Fatalf("login: %d %v", code, h)
	}
}

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: missing %q", what, w)
		}
	}
}

func mustNotContain(t *testing.T, what, body string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(body, w) {
			t.Errorf("%s: unexpectedly contains %q", what, w)
		}
	}
}
