package devices

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// watchedConn is a network client that tells whether the catalog is
// handling a message on the watched topic (entered, not yet left).
type watchedConn struct {
	*mqtt.Client
	topic         atomic.Pointer[string]
	entered, left atomic.Int32
}

func (w *watchedConn) SubscribeSet(qos byte, h mqtt.Handler) (mqtt.Filters, error) {
	return w.Client.SubscribeSet(qos, func(m mqtt.Message) {
		if p := w.topic.Load(); p == nil || *p != m.Topic {
			h(m)
			return
		}
		w.entered.Add(1)
		defer w.left.Add(1)
		h(m)
	})
}

// watch starts watching topic.
func (w *watchedConn) watch(topic string) {
	w.entered.Store(0)
	w.left.Store(0)
	w.topic.Store(&topic)
}

func (w *watchedConn) handling() bool { return w.entered.Load() > 0 && w.left.Load() == 0 }

// startWatchedHouse is a catalog on a watched network client of an
// embedded broker, and a client to publish with.
func startWatchedHouse(t *testing.T) (*house, *watchedConn) {
	t.Helper()
	var conn *watchedConn
	h := runHouse(t, houseOptions{Options: Options{Logger: quietLogger()}, Conn: func(t *testing.T, b *mqtt.Broker) mqtt.PubSub {
		conn = &watchedConn{Client: dialTest(t, b)}
		return conn
	}})
	return h, conn
}

// slowProbe is a device-based discovery config of 16 sensors on one
// state topic: one compares a 3000×3000 list with itself (one unit of
// work each time, ~0.3 s; ~2.5 s under the race detector), the others
// loop 40,000 times, within their budget, so the message stays slow
// however the interpreter charges its work.
func slowProbe(stateTopic string) string {
	cmps := []string{fmt.Sprintf(`"a_deep":{"p":"sensor","unique_id":"slow_deep","state_topic":%q,"value_template":%q}`, stateTopic,
		"{% set a = [0] * 3000 %}{% set b = [a] * 3000 %}{% for i in range(6) %}{% if b == b %}{% endif %}{% endfor %}{{ value_json.t }}")}
	for i := range 15 {
		cmps = append(cmps, fmt.Sprintf(`"b_loop%02d":{"p":"sensor","unique_id":"slow_loop%02d","state_topic":%q,"value_template":%q}`, i, i, stateTopic,
			"{% for i in range(200) %}{% for j in range(200) %}{% endfor %}{% endfor %}{{ value_json.t }}"))
	}
	return `{"dev":{"ids":"slow_probe","name":"Slow probe"},"o":{"name":"test"},"cmps":{` + strings.Join(cmps, ",") + `}}`
}

// TestSlowTemplateBlocksNoReader (issue 28): the catalog rendered a
// message's templates holding the lock its readers take, so while one
// message's templates worked, Live (lookups, the web UI, a firing's
// state), Coverage (/healthz) and a firing's command waited for all of
// them. Rendering is now the compute phase, which holds only the ingest
// lock, and no reader takes that. Readers are measured while the
// catalog handles a slow message: a discovery whose state arrived first
// (rendered when the discovery commits) and a state after it.
// Messages of other devices still wait their turn (one connection
// delivers them in order) and are not lost.
func TestSlowTemplateBlocksNoReader(t *testing.T) {
	const bound = 100 * time.Millisecond // a reader's answer; the message takes seconds
	h, conn := startWatchedHouse(t)
	h.send(t, "zigbee2mqtt/bridge/devices", bridgeTwo, true)
	testutil.Eventually(t, 10*time.Second, "the Zigbee2MQTT devices", func() bool { _, ok := h.c.Snapshot().Get("hall_light.set"); return ok })
	ctx := t.Context()
	readers := []struct {
		name string
		read func() error
	}{
		{"Live", func() error {
			if _, ok := h.c.Live("hall_motion.illuminance"); !ok {
				return fmt.Errorf("no live value")
			}
			return nil
		}},
		{"Coverage", func() error { h.c.Coverage(); return nil }},
		{"StateIDsForAction", func() error { h.c.StateIDsForAction("hall_light.set"); return nil }},
		{"CallAsync", func() error {
			_, err := h.c.CallAsync(ctx, "hall_light.set", map[string]any{"state": "ON"}, mqtt.AckFunc(func(error) {}))
			return err
		}},
		{"Snapshot", func() error { h.c.Snapshot().Get("hall_motion.illuminance"); return nil }},
	}
	const state = "zigbee2mqtt/slow_probe"
	for i, step := range []struct {
		name        string
		before      string // published first, before the watched message
		topic, slow string // the watched message
		retain      bool
		want        string // the slow sensor's value afterwards
	}{
		{name: "a state rendered when its discovery commits", before: `{"t":1}`,
			topic: "homeassistant/device/slow_probe/config", slow: slowProbe(state), retain: true, want: "1"},
		{name: "a state after its discovery", topic: state, slow: `{"t":2}`, want: "2"},
	} {
		ok := t.Run(step.name, func(t *testing.T) {
			if step.before != "" {
				h.send(t, state, step.before, false)
			}
			conn.watch(step.topic)
			h.send(t, step.topic, step.slow, step.retain)
			testutil.Eventually(t, 30*time.Second, "the catalog handling "+step.topic, func() bool { return conn.entered.Load() > 0 })
			lux := fmt.Sprint(20 + i)
			h.send(t, "zigbee2mqtt/hall_motion", `{"illuminance":`+lux+`}`, false)
			for round := range 5 {
				for _, r := range readers {
					if !conn.handling() {
						t.Fatalf("round %d: the message was handled before %s was measured; make its templates slower", round, r.name)
					}
					start := time.Now()
					if err := r.read(); err != nil {
						t.Fatalf("%s: %v", r.name, err)
					}
					if d := time.Since(start); d > bound {
						t.Fatalf("round %d: %s answered after %v while a message's templates rendered, want within %v", round, r.name, d, bound)
					}
				}
			}
			testutil.Eventually(t, 60*time.Second, "the slow message handled", func() bool { return conn.left.Load() > 0 })
			testutil.Eventually(t, 10*time.Second, "the slow sensor's value "+step.want, func() bool {
				l, _ := h.c.Live("slow_probe.a_deep")
				return fmt.Sprint(l.Value) == step.want
			})
			testutil.Eventually(t, 10*time.Second, "the other device's state sent meanwhile", func() bool {
				l, _ := h.c.Live("hall_motion.illuminance")
				return fmt.Sprint(l.Value) == lux
			})
		})
		if !ok {
			return // the next step needs this one's discovery
		}
	}
}
