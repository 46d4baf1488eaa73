package history

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestHistoryQueueBoundsAndCosts: the change feed's subscriber never
// allocates, and a full queue drops and counts instead of growing.
func TestHistoryQueueBoundsAndCosts(t *testing.T) {
	cfg := Config{Queue: 64}
	cfg.Defaults()
	h := New(nil, nil, quiet(), cfg, time.Now)
	ch := devices.Change{Kind: devices.ChangeState, ID: "hall_motion.occupancy", Value: true, Time: time.Now()}
	if a := testing.AllocsPerRun(50, func() { h.onChange(ch) }); a != 0 {
		t.Fatalf("onChange allocates %v per change", a)
	}
	for range 100 {
		h.onChange(ch)
	}
	h.onChange(devices.Change{Kind: devices.ChangeAvailability, ID: "hall_motion", Value: true})
	if len(h.buf) != 64 || h.dropped.Load() != 51+100-64 {
		t.Fatalf("queued %d, dropped %d", len(h.buf), h.dropped.Load())
	}
}

// TestHistoryRetention: a purge deletes the changes older than the
// retention.
func TestHistoryRetention(t *testing.T) {
	ctx := context.Background()
	store, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Now()
	var pts []storage.HistoryPoint
	for i := range 24 * 60 {
		pts = append(pts, storage.HistoryPoint{Entity: "x.temp", T: now.Add(-time.Duration(i) * time.Minute * 10), IsNum: true, Num: float64(i)})
	}
	if _, err := store.WriteHistory(ctx, pts, storage.HistoryWrite{}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Retention: 3 * 24 * time.Hour}
	cfg.Defaults()
	h := New(store, nil, quiet(), cfg, time.Now)
	h.purge(ctx)
	if n, _ := store.HistoryCount(ctx, "x.temp", now.Add(-30*24*time.Hour), now.Add(time.Hour)); n != 3*24*6 {
		t.Fatalf("after purge: %d rows, want %d", n, 3*24*6)
	}
}

// TestHistoryBucketWidths: a chart's span is cut into buckets of a
// readable width, about points of them (720: the engine's default).
func TestHistoryBucketWidths(t *testing.T) {
	for _, c := range []struct {
		span time.Duration
		want time.Duration
	}{{time.Hour, 5 * time.Second}, {24 * time.Hour, 2 * time.Minute}, {7 * 24 * time.Hour, 15 * time.Minute}, {4 * time.Hour, 20 * time.Second}, {50 * time.Hour, 5 * time.Minute}} {
		if got := BucketWidth(c.span, 720); got != c.want {
			t.Errorf("BucketWidth(%v) = %v, want %v", c.span, got, c.want)
		}
	}
}

// TestHistorySeedsValuesBeforeStart: the catalog starts before the
// recorder, so the retained values it has already seen reach no
// subscriber; Start records each (the next start's value before the
// restart), writing a full queue rather than dropping.
func TestHistorySeedsValuesBeforeStart(t *testing.T) {
	ctx := context.Background()
	broker, err := mqtt.StartBroker("127.0.0.1:0", quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	c, err := mqtt.Dial(ctx, mqtt.Options{Broker: broker.URL(), ClientID: "history-seed", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var devs []string
	for i := range 5 {
		devs = append(devs, testutil.Z2MMotion(fmt.Sprintf("0x1%d", i), fmt.Sprintf("motion_%d", i)))
	}
	if err := c.Publish(ctx, "zigbee2mqtt/bridge/devices", []byte(testutil.Z2MBridge(devs...)), 1, true); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		payload := fmt.Sprintf(`{"occupancy":true,"illuminance":%d}`, 100+i)
		if err := c.Publish(ctx, fmt.Sprintf("zigbee2mqtt/motion_%d", i), []byte(payload), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	cat := devices.NewCatalog(devices.Options{Logger: quiet()})
	if err := cat.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the retained values in the catalog", func() bool {
		for i := range 5 {
			for _, prop := range []string{"occupancy", "illuminance"} {
				if l, _ := cat.Live(fmt.Sprintf("motion_%d.%s", i, prop)); l.Value == nil {
					return false
				}
			}
		}
		return true
	})
	store, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := Config{Queue: 4} // less than the 10 states
	cfg.Defaults()
	h := New(store, cat, quiet(), cfg, time.Now)
	h.Start(ctx)
	h.Close()
	for i := range 5 {
		for prop, want := range map[string]any{"occupancy": true, "illuminance": float64(100 + i)} {
			id := fmt.Sprintf("motion_%d.%s", i, prop)
			v, _, ok, err := store.HistorySince(ctx, id)
			if err != nil || !ok || Value(v) != want {
				t.Errorf("%s: recorded %v (%v, %v), want %v", id, Value(v), ok, err, want)
			}
		}
	}
	if st := h.Status(); st.Dropped != 0 || st.Written != 10 {
		t.Errorf("written %d, dropped %d; want 10 and 0", st.Written, st.Dropped)
	}
}
