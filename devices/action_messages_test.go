package devices

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// The messages of a call: an action's Send makes them, and Preview lists,
// Call publishes and CallAsync publishes (the last one asynchronously) the
// same messages in the same order.

// Discovery configs of the actions below: a default-schema light with
// several command topics (payload_on first), one whose brightness template
// fails when rendered, a JSON-schema light and a cover with a position.
var messageConfigs = []struct{ topic, payload string }{
	{"homeassistant/light/desk/config", `{"name":"Desk","unique_id":"desk1","command_topic":"desk/set",` +
		`"brightness_command_topic":"desk/bri/set","rgb_command_topic":"desk/rgb/set","on_command_type":"first"}`},
	{"homeassistant/light/bad/config", `{"name":"Bad","unique_id":"bad1","command_topic":"bad/set","on_command_type":"first",` +
		`"brightness_command_topic":"bad/bri/set","brightness_command_template":"{{ (value | int) / 0 }}"}`},
	{"homeassistant/light/strip/config", `{"name":"Strip","unique_id":"strip1","schema":"json","command_topic":"strip/set","brightness":true}`},
	{"homeassistant/cover/blind/config", `{"name":"Blind","unique_id":"blind1","command_topic":"blind/set",` +
		`"set_position_topic":"blind/pos/set","position_topic":"blind/pos"}`},
	{"zigbee2mqtt/bridge/devices", string(bridgeTwo)},
}

// scriptConn is an in-memory AsyncPublisher: it records every publish it
// is asked for (failed ones too), fails those on topic fail, and
// acknowledges an asynchronous publish at once.
type scriptConn struct {
	*fakeConn
	fail  string
	async []string // the topics published with PublishAsync
}

var errBoom = errors.New("boom")

func (s *scriptConn) Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	if err := s.fakeConn.Publish(ctx, topic, payload, qos, retain); err != nil {
		return err
	}
	if topic == s.fail {
		return errBoom
	}
	return nil
}

func (s *scriptConn) PublishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done mqtt.Acker) (func(error), error) {
	s.async = append(s.async, topic)
	if err := s.Publish(ctx, topic, payload, qos, retain); err != nil {
		return nil, err
	}
	done.Acked(nil)
	return func(error) {}, nil
}

// messageCatalog is a catalog with the actions of messageConfigs on conn.
func messageCatalog(t *testing.T, conn mqtt.PubSub) *Catalog {
	t.Helper()
	c, _ := newTestCatalog()
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	for _, m := range messageConfigs {
		c.HandleMessage(msg(m.topic, m.payload))
	}
	return c
}

func TestCallMessages(t *testing.T) {
	cases := []struct {
		name, id string
		args     map[string]any
		want     []Published
	}{
		{"z2m light", "hall_light.set", map[string]any{"state": "ON", "brightness": 30},
			[]Published{{Topic: "zigbee2mqtt/Hall Light/set", Payload: `{"brightness":30,"state":"ON"}`}}},
		{"default-schema light", "desk.set", map[string]any{"state": "ON", "brightness": 100, "color": map[string]any{"r": 1, "g": 2, "b": 3}},
			[]Published{{Topic: "desk/set", Payload: "ON"}, {Topic: "desk/rgb/set", Payload: "1,2,3"}, {Topic: "desk/bri/set", Payload: "100"}}},
		{"default-schema light off", "desk.set", map[string]any{"state": "OFF"}, []Published{{Topic: "desk/set", Payload: "OFF"}}},
		{"json-schema light", "strip.set", map[string]any{"state": "ON", "brightness": 30},
			[]Published{{Topic: "strip/set", Payload: `{"brightness":30,"state":"ON"}`}}},
		{"cover", "blind.set", map[string]any{"state": "OPEN", "position": 30},
			[]Published{{Topic: "blind/set", Payload: "OPEN"}, {Topic: "blind/pos/set", Payload: "30"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var topics []string
			var want []published
			for _, m := range tc.want {
				topics = append(topics, m.Topic)
				want = append(want, published{m.Topic, m.Payload, 1})
			}
			conn := &scriptConn{fakeConn: newFakeConn()}
			c := messageCatalog(t, conn)
			if got, err := c.Preview(ctx, tc.id, tc.args); err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Preview = %+v, %v; want %+v", got, err, tc.want)
			}
			if len(conn.published()) != 0 {
				t.Fatalf("Preview published %+v", conn.published())
			}
			if topic, err := c.CallTopic(ctx, tc.id, tc.args); err != nil || topic != topics[len(topics)-1] || !reflect.DeepEqual(conn.published(), want) {
				t.Fatalf("CallTopic = %q, %v; published %+v, want %+v", topic, err, conn.published(), want)
			}
			conn.pubs = nil
			acked := make(chan error, 2)
			sent, err := c.CallAsync(ctx, tc.id, tc.args, mqtt.AckFunc(func(err error) { acked <- err }))
			if err != nil || !sent.Pending() || sent.Topic() != topics[len(topics)-1] {
				t.Fatalf("CallAsync = %+v, %v", sent, err)
			}
			if !reflect.DeepEqual(conn.published(), want) || !reflect.DeepEqual(conn.async, topics[len(topics)-1:]) {
				t.Fatalf("CallAsync published %+v (asynchronously %v), want %+v", conn.published(), conn.async, want)
			}
			if err := <-acked; err != nil || len(acked) != 0 {
				t.Fatalf("acked %v, then %d more", err, len(acked))
			}
			// Over a connection that publishes synchronously (the embedded
			// broker's Inline client), CallAsync publishes as Call does.
			inline := newFakeConn()
			c.mu.Lock()
			c.conn = inline
			c.mu.Unlock()
			sent, err = c.CallAsync(ctx, tc.id, tc.args, mqtt.AckFunc(func(err error) { acked <- err }))
			if err != nil || sent.Pending() || sent.Topic() != topics[len(topics)-1] || !reflect.DeepEqual(inline.published(), want) {
				t.Fatalf("synchronous CallAsync = %+v, %v; published %+v", sent, err, inline.published())
			}
		})
	}
}

// TestPreviewOwnActions: Preview lists what the catalog's own actions
// would send (a notification on the bus, a webhook's and an ntfy push's
// bodies) and does nothing: no request is made, a local action's Run is
// not called.
func TestPreviewOwnActions(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posts.Add(1) }))
	defer srv.Close()
	c := NewCatalog(Options{Logger: quietLogger(), Notify: []NotifyChannel{{ID: "notify.bus", Topic: "notify/bus"},
		{ID: "notify.hook", URL: srv.URL + "/hook"}, {ID: "notify.push", Ntfy: srv.URL + "/push"}}})
	var runs atomic.Int32
	if err := c.PutLocal(LocalDevice{ID: "guest", Name: "guest", Type: "helper", Actions: []LocalAction{{ID: "guest.toggle",
		Risk: pilotage.RiskControl, Input: map[string]any{"type": "object"}, Check: func(map[string]any) error { return nil },
		Run: func(context.Context, map[string]any) error { runs.Add(1); return nil }}}}, nil); err != nil {
		t.Fatal(err)
	}
	note := map[string]any{"message": "hi", "title": "t"}
	cases := []struct {
		id   string
		args map[string]any
		want []Published
	}{
		{"notify.bus", note, []Published{{Topic: "notify/bus", Payload: `{"message":"hi","title":"t"}`}}},
		{"notify.hook", note, []Published{{URL: srv.URL + "/hook", Payload: `{"message":"hi","title":"t"}`}}},
		{"notify.push", note, []Published{{URL: srv.URL + "/push", Payload: "hi"}}},
		{"guest.toggle", map[string]any{}, []Published{}},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			got, err := c.Preview(context.Background(), tc.id, tc.args)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Preview = %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
	if posts.Load() != 0 || runs.Load() != 0 {
		t.Fatalf("Preview made %d requests and ran %d local actions", posts.Load(), runs.Load())
	}
}

// TestCallFailureMessages: a call that fails publishes what came before
// the failure and nothing after it, Call and CallAsync alike, and a
// CallAsync that fails never tells its Acker.
func TestCallFailureMessages(t *testing.T) {
	on := map[string]any{"state": "ON", "brightness": 100, "color": map[string]any{"r": 1, "g": 2, "b": 3}}
	cases := []struct {
		name, id, fail string
		args           map[string]any
		tried          []string // the topics publishes were asked for, in order
		wantErr        string
	}{
		{"first message fails", "desk.set", "desk/set", on, []string{"desk/set"}, "devices: desk.set: publish desk/set: boom"},
		{"second message fails", "desk.set", "desk/rgb/set", on, []string{"desk/set", "desk/rgb/set"},
			"devices: desk.set: publish desk/rgb/set: boom"},
		{"last message fails", "desk.set", "desk/bri/set", on, []string{"desk/set", "desk/rgb/set", "desk/bri/set"},
			"devices: desk.set: publish desk/bri/set: boom"},
		{"second message cannot be made", "bad.set", "", map[string]any{"state": "ON", "brightness": 100}, []string{"bad/set"},
			"devices: bad.set: brightness_command_template: division by zero"},
		{"cover's position fails", "blind.set", "blind/pos/set", map[string]any{"state": "OPEN", "position": 30},
			[]string{"blind/set", "blind/pos/set"}, "devices: blind.set: publish blind/pos/set: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := &scriptConn{fakeConn: newFakeConn(), fail: tc.fail}
			c := messageCatalog(t, conn)
			acked := make(chan error, 1)
			sent, err := c.CallAsync(context.Background(), tc.id, tc.args, mqtt.AckFunc(func(err error) { acked <- err }))
			if err == nil || err.Error() != tc.wantErr || sent.Pending() {
				t.Fatalf("CallAsync = %+v, %v; want error %q", sent, err, tc.wantErr)
			}
			if got := topicsOf(conn.published()); !reflect.DeepEqual(got, tc.tried) {
				t.Errorf("CallAsync published %v, want %v", got, tc.tried)
			}
			conn.pubs = nil
			if err := c.Call(context.Background(), tc.id, tc.args); err == nil || err.Error() != tc.wantErr {
				t.Errorf("Call = %v, want %q", err, tc.wantErr)
			}
			if got := topicsOf(conn.published()); !reflect.DeepEqual(got, tc.tried) {
				t.Errorf("Call published %v, want %v", got, tc.tried)
			}
			if len(acked) != 0 { // scriptConn acknowledges on the caller's goroutine
				t.Fatalf("a failed CallAsync told its Acker %v", <-acked)
			}
		})
	}
}

func topicsOf(ps []published) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Topic)
	}
	return out
}
