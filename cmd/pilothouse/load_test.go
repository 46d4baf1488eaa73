package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/mqtt"
)

// deliveryConn is an mqttConn that reports given delivery counts.
type deliveryConn struct {
	mqttConn
	d mqtt.Delivery
}

func (c deliveryConn) Delivery() mqtt.Delivery { return c.d }

// TestLoadReport: backpressure, lost and oversized messages become
// warnings with their counts; a server that kept up has none.
func TestLoadReport(t *testing.T) {
	a := &app{eng: engine.New(engine.Config{}, nil, nil, nil)}
	a.client = deliveryConn{}
	if r := a.load(); len(r.Warnings) != 0 {
		t.Fatalf("warnings of a server that kept up: %q", r.Warnings)
	}
	a.client = deliveryConn{d: mqtt.Delivery{Backpressured: 1200, Waited: 2500 * time.Millisecond, Dropped: 3, Oversized: 2}}
	r := a.load()
	if r.MQTT.Backpressured != 1200 || r.MQTT.WaitedMS != 2500 || r.MQTT.Dropped != 3 || r.MQTT.Oversized != 2 || len(r.Warnings) != 3 ||
		!strings.HasPrefix(r.Warnings[0], "1200 MQTT messages waited") || !strings.HasPrefix(r.Warnings[1], "3 MQTT messages lost") ||
		!strings.HasPrefix(r.Warnings[2], "2 MQTT messages over mqtt.max_message_bytes skipped") {
		t.Fatalf("report %+v", r)
	}
}

// TestLoadSaturated: a delivery path busy ≥ 90% of the last seconds, or
// 256 KiB waiting unread in the connection, is "saturated" on /healthz's
// load, with a warning for the web UI; below that it is "ok" without one.
func TestLoadSaturated(t *testing.T) {
	a := &app{eng: engine.New(engine.Config{}, nil, nil, nil)}
	for _, tc := range []struct {
		busy   float64
		status string
	}{{0, "ok"}, {0.3, "ok"}, {0.95, "saturated"}, {1, "saturated"}} {
		a.client = deliveryConn{d: mqtt.Delivery{Busy: tc.busy}}
		r := a.load()
		if r.Status != tc.status || r.MQTT.Busy != tc.busy || (len(r.Warnings) > 0) != (tc.status == "saturated") {
			t.Fatalf("busy %v: report %+v", tc.busy, r)
		}
		if tc.status == "saturated" && !strings.HasPrefix(r.Warnings[0], "saturated: the rule engine was busy") {
			t.Fatalf("busy %v: warning %q", tc.busy, r.Warnings[0])
		}
	}
}

func TestLoadSaturatedUnread(t *testing.T) {
	a := &app{eng: engine.New(engine.Config{}, nil, nil, nil)}
	for _, tc := range []struct {
		unread int
		status string
	}{{0, "ok"}, {100 << 10, "ok"}, {300 << 10, "saturated"}} {
		a.client = deliveryConn{d: mqtt.Delivery{Unread: tc.unread}}
		r := a.load()
		if r.Status != tc.status || r.MQTT.UnreadBytes != tc.unread {
			t.Fatalf("unread %d: report %+v", tc.unread, r)
		}
		if tc.status == "saturated" && (len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "300 KiB of MQTT messages wait unread")) {
			t.Fatalf("unread %d: warnings %q", tc.unread, r.Warnings)
		}
	}
}
