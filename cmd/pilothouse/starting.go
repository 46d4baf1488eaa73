package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/mqtt"
)

// frontDoor is the HTTP handler from the moment the port is open: until
// the house is up (ready), /healthz answers 503 "starting: N configs read"
// and every other path 503 with Retry-After, so that a health check or a
// client waiting through a long start (thousands of retained discovery
// configs on the broker) sees progress instead of a closed port.
type frontDoor struct {
	ready    atomic.Pointer[http.Handler]
	configs  *atomic.Int64 // discovery configs delivered to the catalog
	instance string
}

func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := f.ready.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	status := fmt.Sprintf("starting: %d configs read", f.configs.Load())
	w.Header().Set("Retry-After", "1")
	if r.URL.Path != "/healthz" {
		http.Error(w, "pilothouse is "+status+"; try again in a moment", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": status, "version": engine.Version, "instance": f.instance})
}

// open hands every request to h from now on.
func (f *frontDoor) open(h http.Handler) { f.ready.Store(&h) }

// configCounter is the connection as the catalog sees it: the messages of
// its filter set that are discovery configs (Home Assistant's, and
// Zigbee2MQTT's device list) are counted on their way in.
type configCounter struct {
	mqttConn
	n             *atomic.Int64
	ha, z2mBridge string
}

func (c configCounter) SubscribeSet(qos byte, h mqtt.Handler) (mqtt.Filters, error) {
	return mqtt.SubscribeSet(c.mqttConn, qos, func(m mqtt.Message) {
		if m.Topic == c.z2mBridge || (strings.HasPrefix(m.Topic, c.ha) && strings.HasSuffix(m.Topic, "/config")) {
			c.n.Add(1)
		}
		h(m)
	})
}

// asyncConfigCounter is a configCounter on a connection with PublishAsync,
// which it keeps.
type asyncConfigCounter struct {
	configCounter
	ap mqtt.AsyncPublisher
}

var _ mqtt.AsyncPublisher = asyncConfigCounter{}

func (c asyncConfigCounter) PublishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done mqtt.Acker) (func(error), error) {
	return c.ap.PublishAsync(ctx, topic, payload, qos, retain, done)
}

// catalogConn is the connection handed to the catalog: a.client, counting
// the discovery configs into n.
func (a *app) catalogConn(n *atomic.Int64) mqtt.PubSub {
	cc := configCounter{mqttConn: a.client, n: n, ha: a.cfg.HAPrefix + "/", z2mBridge: a.cfg.Z2MBase + "/bridge/devices"}
	if ap, ok := a.client.(mqtt.AsyncPublisher); ok {
		return asyncConfigCounter{cc, ap}
	}
	return cc
}
