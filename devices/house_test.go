package devices

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// The one test house of devices: runHouse starts an embedded broker on
// port 0, a catalog on a connection to it and a client over TCP playing
// the devices; the helpers below poll with testutil.Eventually.

// waitTime bounds every wait of the house (generous: -race on a loaded
// machine).
const waitTime = 10 * time.Second

// house is a running catalog on an embedded broker.
type house struct {
	b    *mqtt.Broker
	c    *Catalog
	pub  *mqtt.Client           // plays the devices: Zigbee2MQTT, discovery configs
	logs *testutil.LockedBuffer // the catalog's log (when houseOptions.Logger is nil)
}

// houseOptions configure runHouse; the zero value is the common house.
type houseOptions struct {
	Options // the catalog's
	// Conn connects the catalog to b (nil: the broker's Inline client).
	Conn func(t *testing.T, b *mqtt.Broker) mqtt.PubSub
	// MaxPacketBytes raises the broker's packet bound (0: its default),
	// so that the catalog's own bounds are what a test meets.
	MaxPacketBytes int
}

// overTCP is the house with the catalog on a network client, as with an
// external broker, and the broker's packet bound raised so that the
// catalog's own bounds are what is tested.
func overTCP(o Options) houseOptions {
	o.Logger = quietLogger()
	return houseOptions{Options: o, Conn: viaTCP, MaxPacketBytes: 64 << 20}
}

func runHouse(t *testing.T, o houseOptions) *house {
	t.Helper()
	var bo []mqtt.BrokerOption
	if o.MaxPacketBytes > 0 {
		bo = append(bo, mqtt.WithMaxPacketBytes(o.MaxPacketBytes))
	}
	ctx, b := startBroker(t, bo...)
	h := &house{b: b, logs: &testutil.LockedBuffer{}}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(h.logs, nil))
	}
	if o.Conn == nil {
		o.Conn = viaInline
	}
	h.c = NewCatalog(o.Options)
	if err := h.c.Start(ctx, o.Conn(t, b)); err != nil {
		t.Fatal(err)
	}
	h.pub = dialTest(t, b)
	return h
}

// startBroker starts an embedded broker on port 0; it closes, and ctx
// ends, with the test.
func startBroker(t *testing.T, opts ...mqtt.BrokerOption) (context.Context, *mqtt.Broker) {
	t.Helper()
	b, err := mqtt.StartBroker("127.0.0.1:0", quietLogger(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = b.Close() })
	return ctx, b
}

// viaInline connects to b as the server does with its embedded broker.
func viaInline(t *testing.T, b *mqtt.Broker) mqtt.PubSub {
	in := b.Inline(quietLogger())
	t.Cleanup(in.Close)
	return in
}

// viaTCP connects to b as the server does with an external broker.
func viaTCP(t *testing.T, b *mqtt.Broker) mqtt.PubSub { return dialTest(t, b) }

// connectVia is viaInline ("inline") or viaTCP ("tcp").
func connectVia(t *testing.T, b *mqtt.Broker, via string) mqtt.PubSub {
	t.Helper()
	if via == "inline" {
		return viaInline(t, b)
	}
	return viaTCP(t, b)
}

func dialTest(t *testing.T, b *mqtt.Broker) *mqtt.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	c, err := mqtt.Dial(ctx, mqtt.Options{Broker: b.URL(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// send publishes a message as the devices do (QoS 1).
func (h *house) send(t *testing.T, topic, payload string, retain bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	if err := h.pub.Publish(ctx, topic, []byte(payload), 1, retain); err != nil {
		t.Fatal(err)
	}
}

// publish sends a retained message and waits until the catalog has waitID.
func (h *house) publish(t *testing.T, topic, payload, waitID string) {
	t.Helper()
	h.send(t, topic, payload, true)
	waitEntry(t, h.c, waitID)
}

// waitID waits until the catalog has id.
func (h *house) waitID(t *testing.T, id string) {
	t.Helper()
	waitEntry(t, h.c, id)
}

// liveOf publishes payload on topic until the state id holds want: the
// catalog subscribes to a discovered state topic after it built the
// device, on its own goroutine, so the first publish may come before the
// subscription; the message is said again until it is read.
func (h *house) liveOf(t *testing.T, topic, payload, id string, want any) {
	t.Helper()
	polls := 0
	testutil.Eventually(t, waitTime, fmt.Sprintf("%s = %v after %s on %s", id, want, payload, topic), func() bool {
		if polls%20 == 0 {
			h.send(t, topic, payload, false)
		}
		polls++
		l, _ := h.c.Live(id)
		return fmt.Sprint(l.Value) == fmt.Sprint(want)
	})
}

// availOf publishes an availability payload and waits until id's device
// availability is want.
func (h *house) availOf(t *testing.T, topic, payload, id string, want bool) {
	t.Helper()
	h.send(t, topic, payload, false)
	testutil.Eventually(t, waitTime, fmt.Sprintf("%s available %v after %s on %s", id, want, payload, topic), func() bool {
		l, _ := h.c.Live(id)
		return l.Available != nil && *l.Available == want
	})
}

// waitLive waits until id's live value is want.
func waitLive(t *testing.T, c *Catalog, id string, want any) {
	t.Helper()
	testutil.Eventually(t, waitTime, fmt.Sprintf("%s to be %v", id, want), func() bool {
		l, ok := c.Live(id)
		return ok && l.Value == want
	})
}

// waitEntry waits until the catalog has entry id.
func waitEntry(t *testing.T, c *Catalog, id string) {
	t.Helper()
	testutil.Eventually(t, waitTime, "entry "+id, func() bool { _, ok := c.Snapshot().Get(id); return ok })
}

// commandLog is what the devices received on the command topics a test
// watches, in order.
type commandLog struct {
	mu  sync.Mutex
	got []Published
}

// watchCommands records from now on the messages the devices receive on
// the topics keep admits, retained ones aside; one subscription keeps the
// commands of one call in order.
func (h *house) watchCommands(t *testing.T, keep func(topic string) bool) *commandLog {
	t.Helper()
	l := &commandLog{}
	if err := h.pub.Subscribe("#", 1, func(m mqtt.Message) {
		if !keep(m.Topic) || m.Retained {
			return
		}
		l.mu.Lock()
		l.got = append(l.got, Published{Topic: m.Topic, Payload: string(m.Payload)})
		l.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	return l
}

// during forgets what came before, runs call and returns what arrived:
// once n messages have (or the wait is over), after a pause in which
// nothing more may follow.
func (l *commandLog) during(n int, call func() error) ([]Published, error) {
	l.mu.Lock()
	l.got = nil
	l.mu.Unlock()
	if err := call(); err != nil {
		return nil, err
	}
	testutil.Within(waitTime, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.got) >= n
	})
	time.Sleep(50 * time.Millisecond) // nothing more may follow
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Published{}, l.got...), nil
}
