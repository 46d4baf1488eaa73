// Package demo owns the demo device simulator: a small house of Zigbee2MQTT
// devices (and one Home Assistant discovery device) that announce, report and
// obey commands over MQTT exactly like the real programs, so the discovery
// code that serves real homes serves the demo too.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// Options configure the simulator. Zero values get the defaults.
type Options struct {
	Base     string // Zigbee2MQTT base topic, default "zigbee2mqtt"
	HAPrefix string // Home Assistant discovery prefix, default "homeassistant"
	// Pace is the mean time between spontaneous sensor changes (default
	// 20s). A negative Pace turns spontaneous behaviour off.
	Pace time.Duration
	Seed int64 // seed of the behaviour's random source
	// NotifyTopic is where the simulated phone listens for notifications
	// (e.g. "pilothouse/notify/phone"); empty means no phone.
	NotifyTopic string
	Logger      *slog.Logger
}

// DefaultPace is the default mean time between spontaneous changes.
const DefaultPace = 20 * time.Second

// opTimeout bounds the publishes the simulator makes on its own behalf.
const opTimeout = 5 * time.Second

// Notification is one message the simulated phone received.
type Notification struct {
	Topic   string
	Payload string
	At      time.Time
}

const maxNotifications = 50

// Sim is the running simulator. Create it with New, then Start; Close stops
// it.
type Sim struct {
	conn mqtt.PubSub
	o    Options
	log  *slog.Logger

	// opMu serialises "change state, then publish it", so the retained
	// state on the broker is always the latest one.
	opMu sync.Mutex

	mu            sync.Mutex // guards everything below
	devs          []*device
	weather       weatherReading
	weatherGone   bool
	rng           *rand.Rand
	motionClearAt time.Time
	notes         []Notification
	started       bool
	closed        bool

	wake      chan struct{} // re-plans the behaviour loop
	announce  chan struct{} // asks the loop to re-announce everything
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New returns a simulator that will talk through conn.
func New(conn mqtt.PubSub, o Options) *Sim {
	if o.Base == "" {
		o.Base = "zigbee2mqtt"
	}
	if o.HAPrefix == "" {
		o.HAPrefix = "homeassistant"
	}
	if o.Pace == 0 {
		o.Pace = DefaultPace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	seed := uint64(o.Seed)
	return &Sim{
		conn:     conn,
		o:        o,
		log:      o.Logger.With("component", "demo"),
		devs:     demoDevices(),
		weather:  weatherReading{Temperature: 8.5, Humidity: 71},
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		wake:     make(chan struct{}, 1),
		announce: make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
}

// connWatcher is implemented by *mqtt.Client; when available, the simulator
// re-announces itself after every reconnect (an embedded broker that was
// restarted has lost all retained messages).
type connWatcher interface {
	OnConnectionChange(func(up bool))
}

// Start subscribes to the command topics, announces the bridge, the devices
// and their states (retained), and starts the spontaneous behaviour. ctx
// bounds the start-up only; Close stops the simulator.
func (s *Sim) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("demo: Start called twice or after Close")
	}
	s.started = true
	s.mu.Unlock()

	for _, f := range []string{s.o.Base + "/+/set", s.o.Base + "/+/set/+", s.o.Base + "/+/get"} {
		if err := s.conn.Subscribe(f, 1, s.onCommand); err != nil {
			return fmt.Errorf("demo: subscribe %s: %w", f, err)
		}
	}
	if s.o.NotifyTopic != "" {
		if err := s.conn.Subscribe(s.o.NotifyTopic, 1, s.onNotify); err != nil {
			return fmt.Errorf("demo: subscribe %s: %w", s.o.NotifyTopic, err)
		}
	}
	cw, watching := s.conn.(connWatcher)
	if err := s.announceAll(ctx); err != nil {
		if !watching || !errors.Is(err, mqtt.ErrNotConnected) {
			return err
		}
		s.log.Warn("broker not reachable yet; announcing on connect", "err", err)
	}
	if watching {
		cw.OnConnectionChange(func(up bool) {
			if up {
				kick(s.announce)
			}
		})
	}
	s.wg.Add(1)
	go s.loop()
	return nil
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Close stops the spontaneous behaviour and waits for it. Messages already
// published stay retained on the broker. Safe to call more than once.
func (s *Sim) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
		s.wg.Wait()
	})
}

func (s *Sim) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// announceAll publishes the bridge state, bridge/devices, every device's
// availability and state, and the Home Assistant discovery device.
func (s *Sim) announceAll(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.publishJSON(ctx, s.o.Base+"/bridge/state", map[string]string{"state": "online"}, true); err != nil {
		return err
	}
	if err := s.publishBridgeDevices(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	type msg struct {
		topic string
		state map[string]any
	}
	var states []msg
	for _, d := range s.devs {
		states = append(states, msg{s.stateTopic(d.name), s.stamp(d)})
	}
	s.mu.Unlock()
	for _, m := range states {
		if err := s.publishJSON(ctx, m.topic+"/availability", map[string]string{"state": "online"}, true); err != nil {
			return err
		}
		if err := s.publishJSON(ctx, m.topic, m.state, true); err != nil {
			return err
		}
	}
	return s.announceWeather(ctx)
}

func (s *Sim) stateTopic(name string) string { return s.o.Base + "/" + name }

// stamp sets last_seen and returns a copy of the state. Caller holds s.mu.
func (s *Sim) stamp(d *device) map[string]any {
	d.state["last_seen"] = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	return d.snapshot()
}

func (s *Sim) publishBridgeDevices(ctx context.Context) error {
	s.mu.Lock()
	list := []bridgeDevice{coordinatorEntry()}
	for _, d := range s.devs {
		list = append(list, d.bridgeEntry())
	}
	s.mu.Unlock()
	return s.publishJSON(ctx, s.o.Base+"/bridge/devices", list, true)
}

func (s *Sim) publishJSON(ctx context.Context, topic string, v any, retain bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("demo: encode %s: %w", topic, err)
	}
	return s.publish(ctx, topic, b, retain)
}

func (s *Sim) publish(ctx context.Context, topic string, b []byte, retain bool) error {
	if err := s.conn.Publish(ctx, topic, b, 1, retain); err != nil {
		return fmt.Errorf("demo: publish %s: %w", topic, err)
	}
	return nil
}

// device returns the device called name. Caller holds s.mu.
func (s *Sim) device(name string) *device {
	for _, d := range s.devs {
		if d.name == name {
			return d
		}
	}
	return nil
}

// change runs f on the named device under the lock and, if f reports a
// change, publishes the device's full state (retained).
func (s *Sim) change(ctx context.Context, name string, f func(d *device) (bool, error)) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	d := s.device(name)
	if d == nil {
		s.mu.Unlock()
		return s.noDevice(name)
	}
	wasOccupied := d.state["occupancy"] == true
	changed, err := f(d)
	if err != nil || !changed {
		s.mu.Unlock()
		return err
	}
	// Motion clears by itself a while after it starts, like a real sensor.
	if d.name == "hall_motion" && !wasOccupied && d.state["occupancy"] == true && s.o.Pace > 0 {
		s.motionClearAt = time.Now().Add(s.motionHold())
		kick(s.wake)
	}
	state := s.stamp(d)
	s.mu.Unlock()
	return s.publishJSON(ctx, s.stateTopic(name), state, true)
}

// onCommand handles <base>/<name>/set, <base>/<name>/set/<property> and
// <base>/<name>/get. Bad payloads are logged and ignored.
func (s *Sim) onCommand(m mqtt.Message) {
	if s.isClosed() {
		return
	}
	rest, ok := strings.CutPrefix(m.Topic, s.o.Base+"/")
	if !ok {
		return
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || parts[0] == "bridge" {
		return
	}
	name, verb := parts[0], parts[1]
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if verb == "get" {
		if err := s.change(ctx, name, func(*device) (bool, error) { return true, nil }); err != nil {
			s.log.Info("ignored get", "topic", m.Topic, "err", err)
		}
		return
	}
	patch, err := decodeSet(parts, m.Payload)
	if err != nil {
		s.log.Warn("ignored malformed set command", "topic", m.Topic, "err", err)
		return
	}
	if name == weatherName {
		s.log.Warn("ignored set command: device is read-only", "device", name)
		return
	}
	err = s.change(ctx, name, func(d *device) (bool, error) {
		applied, rejected := d.applySet(patch)
		for _, r := range rejected {
			s.log.Warn("ignored set property", "device", name, "property", r.key, "reason", r.reason)
		}
		return applied, nil
	})
	if err != nil {
		s.log.Warn("set command failed", "topic", m.Topic, "err", err)
	}
}

// decodeSet turns a set message into a property patch: a JSON object on
// <name>/set, or one value (JSON or plain text) on <name>/set/<property>.
func decodeSet(parts []string, payload []byte) (map[string]any, error) {
	if len(parts) == 3 && parts[2] != "" {
		var v any
		if err := json.Unmarshal(payload, &v); err != nil {
			v = strings.TrimSpace(string(payload))
		}
		return map[string]any{parts[2]: v}, nil
	}
	if len(parts) != 2 {
		return nil, fmt.Errorf("unexpected topic shape")
	}
	var patch map[string]any
	if err := json.Unmarshal(payload, &patch); err != nil {
		return nil, fmt.Errorf("payload is not a JSON object: %w", err)
	}
	if patch == nil {
		return nil, fmt.Errorf("payload is not a JSON object")
	}
	return patch, nil
}

func (s *Sim) onNotify(m mqtt.Message) {
	n := Notification{Topic: m.Topic, Payload: string(m.Payload), At: time.Now()}
	s.log.Info("phone notification", "payload", n.Payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, n)
	if len(s.notes) > maxNotifications {
		s.notes = s.notes[len(s.notes)-maxNotifications:]
	}
}

// Notifications returns what the simulated phone received, oldest first
// (the last 50).
func (s *Sim) Notifications() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.notes...)
}

// Trigger forces a state change of a device and publishes it, e.g.
// {"occupancy": true} on hall_motion. Every key must be a property the
// device exposes (settable or not) with a valid value; nothing is applied
// otherwise, and the error (ErrInvalid) names the allowed properties or
// values. For bedroom_remote, {"action": "on"} is a Press.
func (s *Sim) Trigger(ctx context.Context, name string, patch map[string]any) error {
	if len(patch) == 0 {
		return invalidf("demo: nothing to change on %s: give at least one property", name)
	}
	if name == weatherName {
		return s.triggerWeather(ctx, patch)
	}
	if a, ok := patch["action"].(string); ok && name == remoteName && len(patch) == 1 {
		return s.Press(ctx, a)
	}
	return s.change(ctx, name, func(d *device) (bool, error) {
		next := map[string]any{}
		for k, v := range patch {
			e := d.props[k]
			if e == nil {
				return false, invalidf("demo: %s has no property %q; its properties: %s", name, k, d.propertyList())
			}
			val, err := e.coerce(v, d.state[k])
			if err != nil {
				return false, invalidf("demo: %s.%s: %v", name, k, err)
			}
			next[k] = val
		}
		maps.Copy(d.state, next)
		// As the device would report it (a lock's lock_state follows its
		// state), but what was given explicitly stands.
		d.sideEffects(next)
		maps.Copy(d.state, next)
		return true, nil
	})
}

// Press publishes a bedroom_remote button press like Zigbee2MQTT: the state
// message with "action" (not retained: a press is an event) and the plain
// text action on <base>/bedroom_remote/action. A gesture alone ("single",
// "double", "hold") presses the toggle button.
func (s *Sim) Press(ctx context.Context, action string) error {
	action = GestureAction(action)
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	d := s.device(remoteName)
	if d == nil {
		s.mu.Unlock()
		return s.noDevice(remoteName)
	}
	a, err := d.props["action"].coerce(action, nil)
	if err != nil {
		s.mu.Unlock()
		return invalidf("demo: %s action: %v", remoteName, err)
	}
	msg := s.stamp(d)
	msg["action"] = a
	s.mu.Unlock()
	if err := s.publishJSON(ctx, s.stateTopic(remoteName), msg, false); err != nil {
		return err
	}
	return s.publish(ctx, s.stateTopic(remoteName)+"/action", []byte(a.(string)), false)
}

// State returns a copy of a device's current state, nil for an unknown
// device. Numbers are float64, as decoded from the published JSON.
// outdoor_weather gives its temperature and humidity.
func (s *Sim) State(name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == weatherName {
		if s.weatherGone {
			return nil
		}
		return map[string]any{"temperature": s.weather.Temperature, "humidity": s.weather.Humidity}
	}
	if d := s.device(name); d != nil {
		return d.snapshot()
	}
	return nil
}

// Devices returns the friendly names of the simulated devices, the Home
// Assistant one last.
func (s *Sim) Devices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, d := range s.devs {
		names = append(names, d.name)
	}
	if !s.weatherGone {
		names = append(names, weatherName)
	}
	return names
}

// Remove makes a device leave, as Zigbee2MQTT reports it: a device_leave
// bridge event, the new bridge/devices, and its retained state and
// availability cleared. Removing outdoor_weather clears its discovery
// configs instead.
func (s *Sim) Remove(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if name == weatherName {
		return s.removeWeather(ctx)
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	i := s.index(name)
	if i < 0 {
		s.mu.Unlock()
		return fmt.Errorf("demo: no device %q", name)
	}
	d := s.devs[i]
	s.devs = append(s.devs[:i:i], s.devs[i+1:]...)
	s.mu.Unlock()
	event := map[string]any{"type": "device_leave", "data": map[string]string{"ieee_address": d.ieee, "friendly_name": d.name}}
	return errors.Join(
		s.publishJSON(ctx, s.o.Base+"/bridge/event", event, false),
		s.publishBridgeDevices(ctx),
		s.publish(ctx, s.stateTopic(name), nil, true),
		s.publish(ctx, s.stateTopic(name)+"/availability", nil, true),
	)
}

func (s *Sim) index(name string) int {
	for i, d := range s.devs {
		if d.name == name {
			return i
		}
	}
	return -1
}

// Rename gives a Zigbee2MQTT device a new friendly name: the old retained
// topics are cleared, the device is announced under the new name and
// bridge/devices is republished.
func (s *Sim) Rename(old, new string) error {
	if old == weatherName || new == weatherName || new == "" || strings.ContainsAny(new, "+#/") || new == "bridge" {
		return fmt.Errorf("demo: cannot rename %q to %q", old, new)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	d := s.device(old)
	if d == nil || s.device(new) != nil {
		s.mu.Unlock()
		return fmt.Errorf("demo: cannot rename %q to %q: unknown device or name taken", old, new)
	}
	d.name = new
	state := s.stamp(d)
	s.mu.Unlock()
	return errors.Join(
		s.publish(ctx, s.stateTopic(old), nil, true),
		s.publish(ctx, s.stateTopic(old)+"/availability", nil, true),
		s.publishBridgeDevices(ctx),
		s.publishJSON(ctx, s.stateTopic(new)+"/availability", map[string]string{"state": "online"}, true),
		s.publishJSON(ctx, s.stateTopic(new), state, true),
	)
}
