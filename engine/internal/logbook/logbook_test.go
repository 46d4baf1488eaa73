package logbook

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testbus"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// remote is a Zigbee2MQTT remote whose presses are events.
const remote = `{"ieee_address":"0x9","type":"EndDevice","friendly_name":"remote","supported":true,
  "definition":{"vendor":"IKEA","model":"E1524/E1810","description":"Remote","exposes":[
   {"type":"enum","name":"action","property":"action","access":1,"values":["toggle","on"]}]}}`

// haButton is a Home Assistant device trigger that fires on any payload.
const haButton = `{"automation_type":"trigger","topic":"hall/button/action","type":"button_short_press","subtype":"button_1",
  "device":{"identifiers":["btn1"],"name":"Hall button"}}`

// bus is a catalog of the remote on an embedded broker, the client that
// publishes as an outsider would, and a logbook on a fresh store.
type bus struct {
	t     *testing.T
	c     *mqtt.Client
	store *storage.Store
	book  *Logbook
}

func newBus(t *testing.T, cfg Config) *bus {
	t.Helper()
	ctx := context.Background()
	cat, c := testbus.Start(t, "logbook-test", []mqtt.Message{
		{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(testutil.Z2MBridge(remote))},
		{Topic: "homeassistant/device_automation/hall/button/config", Payload: []byte(haButton)},
	}, "remote", "hall_button")
	store, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	book := New(store, quiet(), cfg, 24*time.Hour, time.Now)
	book.Start(ctx, cat)
	t.Cleanup(book.Close)
	return &bus{t: t, c: c, store: store, book: book}
}

func (b *bus) press(action string) {
	b.t.Helper()
	b.publish("zigbee2mqtt/remote", fmt.Sprintf(`{"action":%q}`, action))
}

func (b *bus) publish(topic, payload string) {
	b.t.Helper()
	if err := b.c.Publish(context.Background(), topic, []byte(payload), 0, false); err != nil {
		b.t.Fatal(err)
	}
}

// events waits until n entries of kind are written and returns them.
func (b *bus) entries(kind string, n int) []storage.LogEntry {
	b.t.Helper()
	var got []storage.LogEntry
	testutil.Eventually(b.t, 15*time.Second, fmt.Sprintf("%d %s entries", n, kind), func() bool {
		b.book.Sync()
		var err error
		got, err = b.store.ListLog(context.Background(), storage.LogFilter{Kind: kind})
		if err != nil {
			b.t.Fatal(err)
		}
		return len(got) >= n
	})
	return got
}

// TestLogbookBoundsAnEventsText: a 255 KB action from the bus (a
// Zigbee2MQTT remote's, even one outside its values, or a Home Assistant
// device trigger's) is an entry of a few hundred bytes that says it was
// cut and how big it was, counted in Status.
func TestLogbookBoundsAnEventsText(t *testing.T) {
	b := newBus(t, Config{FlushEvery: 50 * time.Millisecond})
	big := strings.Repeat("é", 255<<10/2)
	const n = 4
	for i := range n {
		b.press(fmt.Sprint(i) + big)
	}
	b.publish("hall/button/action", "x"+big)
	b.press("toggle")
	got := b.entries("event", n+2)
	var sizes []int
	for _, en := range got {
		if en.Text == "remote.action: toggle" {
			continue
		}
		sizes = append(sizes, len(en.Text))
		if len(en.Text) > maxText || !strings.HasSuffix(en.Text, fmt.Sprintf("… (%d bytes)", 1+len(big))) {
			t.Errorf("an event's text is %d bytes: %.80q…%q", len(en.Text), en.Text, en.Text[max(0, len(en.Text)-40):])
		}
		if strings.ContainsRune(en.Text, '\uFFFD') {
			t.Errorf("text not cut at a whole character: %.80q", en.Text)
		}
	}
	t.Logf("stored texts of %d-byte values: %v bytes", 1+len(big), sizes)
	if st := b.book.Status(); st.Cut != n+1 || st.Written != n+2 {
		t.Errorf("status: cut %d, written %d; want %d and %d", st.Cut, st.Written, n+1, n+2)
	}
}

// TestLogbookAddCutsAnyText: Add is the last guard for an entry made
// elsewhere (a name or value in a rule's or the server's line).
func TestLogbookAddCutsAnyText(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		cut        bool
	}{
		{"short", "rule r installed", false},
		{"at the bound", strings.Repeat("a", maxText), false},
		{"one over", strings.Repeat("a", maxText+1), true},
		{"multi-byte at the bound", strings.Repeat("a", maxText-1) + "€", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			book := New(nil, quiet(), Config{}, time.Hour, time.Now)
			book.Add(storage.LogEntry{Kind: "rule", Text: tc.text})
			got := book.buf[0].Text
			if cut := book.Status().Cut == 1; cut != tc.cut || cut != (got != tc.text) {
				t.Fatalf("cut %v (%d bytes), want %v", cut, len(got), tc.cut)
			}
			if tc.cut && (!strings.HasSuffix(got, fmt.Sprintf("… (%d bytes)", len(tc.text))) || len(got) > maxText+32) {
				t.Fatalf("cut text %q", got[max(0, len(got)-40):])
			}
		})
	}
}

// TestLogbookQueueBoundedByBytes: entries beyond the queue's bytes are
// dropped and counted, not held.
func TestLogbookQueueBoundedByBytes(t *testing.T) {
	book := New(nil, quiet(), Config{QueueBytes: 10 * (maxText + 200)}, time.Hour, time.Now)
	for range 100 {
		book.Add(storage.LogEntry{Kind: "rule", Text: strings.Repeat("x", 10<<10)})
	}
	if st := book.Status(); len(book.buf) == 0 || len(book.buf) >= 20 || st.Dropped != uint64(100-len(book.buf)) || book.bytes > book.cfg.QueueBytes {
		t.Fatalf("queued %d entries (%d bytes), dropped %d", len(book.buf), book.bytes, st.Dropped)
	}
}

// TestLogbookQueueKeepsRoomForTheHouse: the bus's entries take at most
// half of the queue, so a flood on the bus between two writes leaves room
// for a firing or an approval that comes after it (attacker round 16:
// one of ten approval lines reached the logbook during two floods).
func TestLogbookQueueKeepsRoomForTheHouse(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"by count", Config{Queue: 10}},
		{"by bytes", Config{Queue: 1000, QueueBytes: 10 * 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			book := New(nil, quiet(), tc.cfg, time.Hour, time.Now)
			for i := range 100 {
				book.Add(storage.LogEntry{Kind: "event", Text: fmt.Sprintf("remote.action: %0200d", i)})
			}
			bus := len(book.buf)
			book.Add(storage.LogEntry{Kind: "approval", Text: "deploy of lock-at-night waits for approval"})
			st := book.Status()
			if bus == 0 || len(book.buf) != bus+1 || book.buf[bus].Kind != "approval" || st.DroppedBus != uint64(100-bus) || st.Dropped != st.DroppedBus {
				t.Fatalf("queued %d of the bus's, then %d in all; status %+v", bus, len(book.buf), st)
			}
		})
	}
}

// TestLogbookBusFloodKeepsTheOwnersLines: presses on the bus past its
// share of MaxRows trim only older presses; the rule, approval and server
// lines written before stay.
func TestLogbookBusFloodKeepsTheOwnersLines(t *testing.T) {
	b := newBus(t, Config{MaxRows: 20, FlushEvery: 50 * time.Millisecond})
	own := []storage.LogEntry{{Kind: "server", Text: "Pilothouse started: 0 rules armed"}, {Kind: "rule", Rule: "r", Text: "rule r installed"},
		{Kind: "approval", Rule: "r", Text: "deploy of r approved"}}
	for _, en := range own {
		b.book.Add(en)
	}
	b.book.Sync()
	const presses = 60
	for i := range presses {
		b.press(fmt.Sprint("p", i))
	}
	testutil.Eventually(t, 15*time.Second, "the presses written", func() bool {
		b.book.Sync()
		return b.book.Status().Written >= uint64(len(own)+presses)
	})
	for _, en := range own {
		if got := b.entries(en.Kind, 0); len(got) != 1 || got[0].Text != en.Text {
			t.Errorf("%s lines after the flood: %v", en.Kind, got)
		}
	}
	events := b.entries("event", 10)
	if st := b.book.Status(); len(events) != 10 || events[0].Text != fmt.Sprint("remote.action: p", presses-1) || st.TrimmedBus != presses-10 || st.Trimmed != st.TrimmedBus {
		t.Errorf("%d events kept, newest %q; status %+v", len(events), events[0].Text, st)
	}
}

// TestLogbookQueueKeepsRoomUnderAGuestsFlood: other principals' rules'
// lines take at most a quarter of the queue, so a guest's firing flood
// and a flood on the bus between two writes leave room for another
// principal's approval requests and the owner's firings (attacker round
// 18: 5 of 10 approval lines reached the logbook).
func TestLogbookQueueKeepsRoomUnderAGuestsFlood(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"by count", Config{Queue: 80}},
		{"by bytes", Config{Queue: 1000, QueueBytes: 80 * 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Guests = []string{"owner", "guest", "family"}
			book := New(nil, quiet(), tc.cfg, time.Hour, time.Now)
			for i := range 200 {
				book.Add(storage.LogEntry{Kind: "event", Text: fmt.Sprintf("remote.action: %0200d", i)})
				book.Add(storage.LogEntry{Kind: []string{"firing", "rule"}[i%2], Principal: "guest", Rule: "g", Text: fmt.Sprintf("g fired: %0200d", i)})
			}
			guest := len(book.buf) - book.busN
			var want []string
			for i := range 10 {
				want = append(want, fmt.Sprint("deploy of lock ", i, " waits for approval"), fmt.Sprint("porch fired: success ", i))
				book.Add(storage.LogEntry{Kind: "approval", Principal: "family", Text: want[len(want)-2]})
				book.Add(storage.LogEntry{Kind: "firing", Principal: "owner", Rule: "porch", Text: want[len(want)-1]})
			}
			var got []string
			for _, en := range book.buf[len(book.buf)-len(want):] {
				got = append(got, en.Text)
			}
			st := book.Status()
			if fmt.Sprint(got) != fmt.Sprint(want) || guest == 0 || st.DroppedGuest != uint64(200-guest) || st.Dropped != st.DroppedBus+st.DroppedGuest {
				t.Fatalf("queued %d of the guest's, then %q; status %+v", guest, got, st)
			}
		})
	}
}
