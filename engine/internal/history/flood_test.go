package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/testbus"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// z2mPanel is a Zigbee2MQTT device with a text state, which the bus can
// set to anything up to the message bound.
func z2mPanel(ieee, name string) string {
	return `{"ieee_address":"` + ieee + `","type":"EndDevice","friendly_name":"` + name + `","supported":true,
  "definition":{"vendor":"Acme","model":"P1","description":"Panel","exposes":[
   {"type":"text","name":"note","property":"note","access":1}]}}`
}

// floodHouse is a catalog of a motion sensor and a panel on an embedded
// broker, a client to publish as the bus, and a store in dir.
func floodHouse(t *testing.T, dir string) (*devices.Catalog, *mqtt.Client, *storage.Store) {
	t.Helper()
	ctx := context.Background()
	bridge := testutil.Z2MBridge(testutil.Z2MMotion("0x11", "hall"), z2mPanel("0x12", "panel"))
	cat, c := testbus.Start(t, "history-flood", []mqtt.Message{{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(bridge)}}, "panel.note")
	store, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return cat, c, store
}

// publishState publishes payload to a device's topic and waits until the
// catalog holds id's value want.
func publishState(t *testing.T, c *mqtt.Client, cat *devices.Catalog, dev, payload, id string, want any) {
	t.Helper()
	if err := c.Publish(context.Background(), "zigbee2mqtt/"+dev, []byte(payload), 1, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, id+" in the catalog", func() bool {
		l, _ := cat.Live(id)
		return l.Value == want
	})
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

func heapBytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestHistoryFloodOfHugeValuesIsBounded: a bus flooding a text state
// with 200 KB values neither holds them in the queue nor stores them (a
// marker with the size is recorded and counted), and a numeric state's
// history and since() keep working beside it.
func TestHistoryFloodOfHugeValuesIsBounded(t *testing.T) {
	const n, size = 60, 200_000
	ctx := context.Background()
	dir := t.TempDir()
	cat, c, store := floodHouse(t, dir)
	cfg := Config{FlushEvery: time.Hour} // only Sync and a half-full queue write
	cfg.Defaults()
	h := New(store, cat, quiet(), cfg, time.Now)
	h.Start(ctx)
	defer h.Close()
	publishState(t, c, cat, "hall", `{"illuminance":5}`, "hall.illuminance", float64(5))
	h.Sync()
	disk, heap := dirBytes(t, dir), heapBytes()
	var last string
	for i := range n {
		last = fmt.Sprintf("%03d%s", i, strings.Repeat(string(rune('a'+i%26)), size-3))
		publishState(t, c, cat, "panel", `{"note":"`+last+`"}`, "panel.note", last)
	}
	grew := heapBytes() - heap
	t.Logf("the heap grew by %d bytes", grew)
	if grew > n*size/4 {
		t.Errorf("the heap grew by %d bytes with %d changes of %d bytes queued", grew, n, size)
	}
	st := h.Status()
	if st.QueuedBytes > n*256 || st.Dropped != 0 {
		t.Errorf("queued %d changes in %d bytes, dropped %d", st.Queued, st.QueuedBytes, st.Dropped)
	}
	publishState(t, c, cat, "hall", `{"illuminance":7}`, "hall.illuminance", float64(7))
	h.Sync()
	grew = dirBytes(t, dir) - disk
	t.Logf("the database grew by %d bytes", grew)
	if grew > n*size/10 {
		t.Errorf("the database grew by %d bytes for %d changes of %d bytes", grew, n, size)
	}
	// Markers of one size are one value (its content is not kept): the
	// first is a change, the others are the same.
	if st := h.Status(); st.TooLarge != n || st.Written+st.Same < n+1 || st.Same < n-1 {
		t.Errorf("too large %d, written %d, same %d; want %d, and %d or more recorded, %d the same", st.TooLarge, st.Written, st.Same, n, n+1, n-1)
	}
	v, _, ok, err := store.HistorySince(ctx, "panel.note")
	if want := fmt.Sprintf(`{"too_large_bytes":%d}`, size+2); err != nil || !ok || v.JSON != want {
		t.Errorf("panel.note recorded as %.80q (%v, %v), want %s", v.JSON, ok, err, want)
	}
	v, since, ok, err := store.HistorySince(ctx, "hall.illuminance")
	l, _ := cat.Live("hall.illuminance")
	if err != nil || !ok || Value(v) != float64(7) || !since.Equal(l.LastChanged.Truncate(time.Millisecond)) {
		t.Errorf("hall.illuminance since %v: %v (%v, %v), want 7 since %v", since, Value(v), ok, err, l.LastChanged)
	}
	eh := EntityHistory{Numeric: true}
	if err := Read(ctx, store, &eh, "hall.illuminance", time.Now().Add(-time.Hour), time.Now().Add(time.Minute), 720, 32); err != nil || eh.Count != 2 {
		t.Errorf("hall.illuminance's chart: %d changes (%v), want 2", eh.Count, err)
	}
}

// TestHistoryQueueBoundedInBytes: values under MaxValueBytes fill the
// queue's bytes before its count, and past them changes are dropped and
// counted; a value over it costs the queue no more than a number.
func TestHistoryQueueBoundedInBytes(t *testing.T) {
	const small = 1000
	for _, c := range []struct {
		name             string
		v                any
		queued, tooLarge int
		bytesAtLeast     int
	}{
		{"small values", strings.Repeat("x", small), 16 * 1024 / (small + itemOverhead + 10), 0, 15 * 1024},
		{"huge values", strings.Repeat("x", 200_000), 64, 64, 0},
		{"huge objects", map[string]any{"a": []any{strings.Repeat("y", 2000), 1.0}}, 64, 64, 0},
		{"numbers", 21.5, 64, 0, 64 * itemOverhead},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Queue: 64, QueueBytes: 16 * 1024}
			cfg.Defaults()
			h := New(nil, nil, quiet(), cfg, time.Now)
			ch := devices.Change{Kind: devices.ChangeState, ID: "panel.note", Value: c.v, Time: time.Now()}
			roomy := New(nil, nil, quiet(), Config{Queue: 64, QueueBytes: 1 << 20}, time.Now)
			if a := testing.AllocsPerRun(50, func() { roomy.onChange(ch) }); a != 0 {
				t.Errorf("sizing a change allocates %v", a)
			}
			for range 100 {
				h.onChange(devices.Change{Kind: devices.ChangeState, ID: "panel.note", Value: c.v, Time: time.Now()})
			}
			st := h.Status()
			if st.Queued != c.queued || st.Dropped != uint64(100-c.queued) || st.QueuedBytes > cfg.QueueBytes || st.QueuedBytes < c.bytesAtLeast {
				t.Errorf("queued %d in %d bytes, dropped %d; want %d queued in at most %d bytes", st.Queued, st.QueuedBytes, st.Dropped, c.queued, cfg.QueueBytes)
			}
			big := 0
			for _, it := range h.buf {
				if it.big != 0 && it.v == nil {
					big++
				}
			}
			if big != c.tooLarge {
				t.Errorf("%d queued values replaced by their size, want %d", big, c.tooLarge)
			}
		})
	}
}

// TestHistoryValueBoundIsOnItsJSON: a value whose escapes take it over
// MaxValueBytes only once encoded is recorded as a marker too, with its
// encoded size.
func TestHistoryValueBoundIsOnItsJSON(t *testing.T) {
	ctx := context.Background()
	h, store := feedless(t)
	ctl := strings.Repeat("\x01", 300) // 302 bytes estimated, 1,802 encoded
	h.onChange(devices.Change{Kind: devices.ChangeState, ID: "panel.note", Value: ctl, Time: time.Now()})
	h.write(ctx, false)
	v, _, ok, err := store.HistorySince(ctx, "panel.note")
	if err != nil || !ok || v.JSON != `{"too_large_bytes":1802}` || h.Status().TooLarge != 1 {
		t.Errorf("recorded %.60q (%v, %v), %d too large", v.JSON, ok, err, h.Status().TooLarge)
	}
}

// TestHistorySameRecorded: the value a huge one is recorded as matches
// that value after a restart (its size, escapes included), and no other.
func TestHistorySameRecorded(t *testing.T) {
	ctx := context.Background()
	h, store := feedless(t)
	huge, ctl := strings.Repeat("x", 5000), strings.Repeat("\x01", 300)
	recorded := func(v any) any {
		h.onChange(devices.Change{Kind: devices.ChangeState, ID: "panel.note", Value: v, Time: time.Now()})
		h.write(ctx, false)
		got, _, _, err := store.HistorySince(ctx, "panel.note")
		if err != nil {
			t.Fatal(err)
		}
		return Value(got)
	}
	for _, c := range []struct {
		name     string
		recorded any
		v        any
		same     bool
	}{
		{"the same huge value", recorded(huge), huge, true},
		{"another size", recorded(huge), huge + "x", false},
		{"escaped over the bound", recorded(ctl), ctl, true},
		{"a small value", recorded("ON"), "ON", false},
		{"a value that looks like a marker", recorded(map[string]any{"too_large_bytes": 5.0}), 5.0, false},
	} {
		if got := SameRecorded(c.recorded, c.v); got != c.same {
			t.Errorf("%s: SameRecorded(%.60v) = %v", c.name, c.recorded, got)
		}
	}
}

// feedless is a recorder with the defaults over a store in a temporary
// folder and no catalog: a test feeds it onChange itself.
func feedless(t *testing.T) (*Recorder, *storage.Store) {
	t.Helper()
	store, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := Config{}
	cfg.Defaults()
	return New(store, nil, quiet(), cfg, time.Now), store
}

// TestHistoryFloodBoundedOnDisk: a bus flooding a text state with values
// just under MaxValueBytes keeps the stored history within MaxBytes
// after every write, the oldest changes going first and counted; a
// numeric state's last change and since() still work beside it.
func TestHistoryFloodBoundedOnDisk(t *testing.T) {
	const n, maxBytes = 120, 48 << 10
	ctx := context.Background()
	cat, c, store := floodHouse(t, t.TempDir())
	cfg := Config{FlushEvery: time.Hour, MaxBytes: maxBytes} // only Sync and a half-full queue write
	cfg.Defaults()
	h := New(store, cat, quiet(), cfg, time.Now)
	h.Start(ctx)
	defer h.Close()
	publishState(t, c, cat, "hall", `{"illuminance":5}`, "hall.illuminance", float64(5))
	var last string
	for i := range n {
		last = fmt.Sprintf("%04d%s", i, strings.Repeat("n", MaxValueBytes-40))
		publishState(t, c, cat, "panel", `{"note":"`+last+`"}`, "panel.note", last)
		if i%20 == 19 {
			h.Sync()
			if b, err := store.HistoryBytes(ctx); err != nil || b > maxBytes {
				t.Fatalf("after %d notes the history holds %d bytes (%v), bound %d", i+1, b, err, maxBytes)
			}
		}
	}
	publishState(t, c, cat, "hall", `{"illuminance":7}`, "hall.illuminance", float64(7))
	h.Sync()
	notes, err := store.HistoryChanges(ctx, "panel.note", time.Now().Add(-time.Hour), time.Now().Add(time.Hour), 1000)
	if err != nil || len(notes) == 0 || len(notes) >= n || Value(notes[len(notes)-1]) != last {
		t.Fatalf("%d notes kept of %d (%v), the newest last", len(notes), n, err)
	}
	if st := h.Status(); st.TrimmedForBytes < uint64(n-len(notes)) || st.MaxBytes != maxBytes || st.TooLarge != 0 {
		t.Errorf("status %+v: want %d or more trimmed for bytes, none too large", st, n-len(notes))
	}
	v, since, ok, err := store.HistorySince(ctx, "hall.illuminance")
	l, _ := cat.Live("hall.illuminance")
	if err != nil || !ok || Value(v) != float64(7) || !since.Equal(l.LastChanged.Truncate(time.Millisecond)) {
		t.Errorf("hall.illuminance since %v: %v (%v, %v), want 7 since %v", since, Value(v), ok, err, l.LastChanged)
	}
}
