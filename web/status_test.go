package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
)

// houseState is a settable Options.Health.
type houseState struct {
	mu sync.Mutex
	h  Health
}

func (s *houseState) get() Health { s.mu.Lock(); defer s.mu.Unlock(); return s.h }

func (s *houseState) set(f func(h *Health)) { s.mu.Lock(); f(&s.h); s.mu.Unlock() }

// statusOf reads /status.
func (c *client) statusOf() statusView {
	c.t.Helper()
	code, body, _ := c.get("/status")
	var v statusView
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
		c.t.Fatalf("/status: %d %s", code, body)
	}
	return v
}

// TestStatusIndicator: every page and /status say whether the broker and
// storage are fine, and what is wrong when not; a guest is not told where
// the broker is.
func TestStatusIndicator(t *testing.T) {
	f := newFixture(t, nil)
	hs := &houseState{h: Health{Broker: "tcp://broker.lan:1883", BrokerOK: true, StorageOK: true, Z2MBase: "zigbee2mqtt", HAPrefix: "homeassistant", Devices: 3}}
	srv := httptest.NewServer(Handler(f.e, Options{Principals: testPrincipals(), Logger: quiet(), Health: hs.get}))
	defer srv.Close()
	owner, guest := f.client(), f.client()
	owner.base, guest.base = srv.URL, srv.URL
	if code, _, _ := owner.get("/status"); code != http.StatusUnauthorized {
		t.Fatalf("/status without a login: %d", code)
	}
	owner.login(ownerTok)
	guest.login(guestTok)

	_, body, _ := owner.get("/runs/none") // an error page has it too
	mustContain(t, "healthy", body, `id="conn"`, `data-ok="true"`, "Broker tcp://broker.lan:1883: connected", `id="trouble" role="alert" hidden`)
	if v := owner.statusOf(); !v.OK || v.Label != "connected" || v.Problem != "" {
		t.Fatalf("healthy /status: %+v", v)
	}

	hs.set(func(h *Health) {
		h.BrokerOK, h.BrokerReason = false, "mqtt disconnected: connection to the broker lost (EOF)"
	})
	_, body, _ = owner.get("/")
	mustContain(t, "broker down", body, `class="conn off"`, ">broker unreachable<",
		"No connection to the MQTT broker tcp://broker.lan:1883: connection to the broker lost (EOF). Device values")
	_, body, _ = guest.get("/")
	mustContain(t, "broker down, guest", body, "No connection to the MQTT broker: connection to the broker lost (EOF).")
	mustNotContain(t, "broker down, guest", body, "broker.lan")

	hs.set(func(h *Health) {
		h.BrokerReason = "mqtt broker not answering: nothing has come from it for 1m0s (keepalive 30s)"
	})
	if v := owner.statusOf(); v.OK || v.Label != "broker not answering" || !strings.HasPrefix(v.Problem, "The MQTT broker tcp://broker.lan:1883 is not answering: nothing has come") {
		t.Fatalf("frozen broker /status: %+v", v)
	}

	hs.set(func(h *Health) {
		h.BrokerReason = "mqtt session taken over: the broker closed the connection and at once accepted a new one 3 times in a row"
	})
	if v := owner.statusOf(); v.OK || v.Label != "broker session taken over" || !strings.HasPrefix(v.Problem, "Another client keeps taking Pilothouse's session on the MQTT broker tcp://broker.lan:1883: the broker closed") {
		t.Fatalf("session taken over /status: %+v", v)
	}

	hs.set(func(h *Health) {
		h.BrokerReason = `mqtt broker has not accepted 7 of 7 subscriptions (mqtt: subscribe "zigbee2mqtt/+": refused by the broker (code 0x80)); retrying in 4s, messages on them are not received meanwhile`
	})
	if v := owner.statusOf(); v.OK || v.Label != "broker refuses subscriptions" ||
		v.Problem != `The MQTT broker tcp://broker.lan:1883 has not accepted Pilothouse's subscriptions: 7 of 7 subscriptions (mqtt: subscribe "zigbee2mqtt/+": refused by the broker (code 0x80)); retrying in 4s, messages on them are not received meanwhile.` {
		t.Fatalf("refused subscriptions /status: %+v", v)
	}

	hs.set(func(h *Health) { // back: how long it was away is in the tooltip (issue 28, item 5)
		h.BrokerOK, h.BrokerReason = true, ""
		h.BrokerLostAt, h.BrokerAway = time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC), 1234*time.Millisecond
	})
	if v := owner.statusOf(); !v.OK || !strings.HasPrefix(v.Title, "Broker tcp://broker.lan:1883: connected (last away 1.2s from 2024-07-01 ") {
		t.Fatalf("back after an outage /status: %+v", v)
	}

	hs.set(func(h *Health) {
		h.BrokerOK, h.StorageOK, h.StorageError = true, false, "database is locked"
		h.StorageSince = time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)
	})
	if v := owner.statusOf(); v.OK || v.Label != "storage failing" || !strings.Contains(v.Problem, "Storage cannot write since 2024-07-01 ") || !strings.Contains(v.Problem, "database is locked") {
		t.Fatalf("storage /status: %+v", v)
	}
}

// TestDevicesEmptyWhenScopeHidesAll: a login whose scope shows no device
// is told so, not that the house has none (nor where the broker is).
func TestDevicesEmptyWhenScopeHidesAll(t *testing.T) {
	f := newFixture(t, nil)
	nobody := &engine.Principal{Name: "nobody", TokenHash: engine.HashToken("nobody-secret"), Scope: engine.Scope{Devices: []string{"attic_*"}}}
	hs := &houseState{h: Health{Broker: "tcp://broker.lan:1883", BrokerOK: true, StorageOK: true, Z2MBase: "zigbee2mqtt", Devices: 3}}
	srv := httptest.NewServer(Handler(f.e, Options{Principals: []*engine.Principal{nobody}, Logger: quiet(), Health: hs.get}))
	defer srv.Close()
	c := f.client()
	c.base = srv.URL
	c.login("nobody-secret")
	_, body, _ := c.get("/devices")
	mustContain(t, "devices, nothing in scope", body, `id="empty"`, "No device is in your scope", "The house has 3 devices")
	mustNotContain(t, "devices, nothing in scope", body, "broker.lan", "bridge/devices")
	_, body, _ = c.get("/")
	mustContain(t, "rules, may not deploy", body, "No rules visible to you")
}

// TestDevicesEmptyHouseSaysWhereToLook: an empty house's Devices page
// tells how to see what arrives on both discovery topics, Zigbee2MQTT's
// device list and Home Assistant's prefix (it gave only the first).
func TestDevicesEmptyHouseSaysWhereToLook(t *testing.T) {
	h := testhouse.RunHouse(t, testhouse.Options{NoDemo: true})
	hs := &houseState{h: Health{Broker: "tcp://broker.lan:1883", BrokerOK: true, StorageOK: true, Z2MBase: "zigbee2mqtt", HAPrefix: "homeassistant"}}
	srv := httptest.NewServer(Handler(h.Engine, Options{Logger: quiet(), Health: hs.get}))
	defer srv.Close()
	c := &client{t: t, base: srv.URL, c: srv.Client()}
	_, body, _ := c.get("/devices")
	mustContain(t, "empty devices", body, `id="empty"`, "No devices yet",
		`See what arrives, against the broker: <code>mosquitto_sub -t 'zigbee2mqtt/bridge/devices' -C 1 -v</code> (Zigbee2MQTT's device list); <code>mosquitto_sub -t 'homeassistant/#' -v</code> (Home Assistant discovery configs and states).`)
}
