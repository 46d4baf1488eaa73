package devices

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// realDir holds real MQTT payloads (copied from shared/testdata/mqtt-real;
// its README says where each came from).
const realDir = "testdata/mqtt-real"

type manifestEntry struct {
	Seq       int      `json:"seq"`
	Topic     string   `json:"topic"`
	File      string   `json:"file"`
	Retain    bool     `json:"retain"`
	Format    string   `json:"format"`
	Quirks    []string `json:"quirks"`
	Malformed []string `json:"malformed"`
}

type replayMsg struct {
	manifestEntry
	msg mqtt.Message
}

// loadReplay reads the three manifests merged by seq.
func loadReplay(tb testing.TB) []replayMsg {
	tb.Helper()
	var all []manifestEntry
	for _, f := range []string{"manifest.json", "manifest-z2m.json", "manifest-z2m-ha.json"} {
		b, err := os.ReadFile(filepath.Join(realDir, f))
		if err != nil {
			tb.Fatal(err)
		}
		var m struct {
			Entries []manifestEntry `json:"entries"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		all = append(all, m.Entries...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq })
	out := make([]replayMsg, 0, len(all))
	for _, e := range all {
		p, err := os.ReadFile(filepath.Join(realDir, e.File))
		if err != nil {
			tb.Fatalf("seq %d: %v", e.Seq, err)
		}
		out = append(out, replayMsg{e, mqtt.Message{Topic: e.Topic, Payload: p, Retained: e.Retain}})
	}
	return out
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fakeClock is a settable clock for tests.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func newTestCatalog(opts ...func(*Options)) (*Catalog, *fakeClock) {
	clk := &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	o := Options{Logger: quietLogger(), Now: clk.now}
	for _, f := range opts {
		f(&o)
	}
	return NewCatalog(o), clk
}

// replayUntil feeds every message with seq <= last (all when last < 0).
func replayUntil(c *Catalog, clk *fakeClock, msgs []replayMsg, last int) {
	for _, m := range msgs {
		if last >= 0 && m.Seq > last {
			return
		}
		clk.t = clk.t.Add(2 * time.Second)
		c.HandleMessage(m.msg)
	}
}
