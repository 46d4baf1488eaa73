package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// corpusCase is one discovery config of testdata/ha/corpus.json as its
// producer publishes it, where it comes from, and what Home Assistant
// makes of it: the states its payloads give and the exact messages each
// command publishes.
type corpusCase struct {
	Producer      string          `json:"producer"`
	Source        string          `json:"source"`
	Reconstructed bool            `json:"reconstructed"`
	Topic         string          `json:"topic"`
	Payload       json.RawMessage `json:"payload"`
	File          string          `json:"file"` // instead of payload: a file under testdata
	Device        string          `json:"device"`
	Expect        string          `json:"expect"` // faithful, degraded or dropped
	Gap           string          `json:"gap"`    // what the device's description says is missing (degraded, dropped)
	// OthersGaps are what other configs of the same device lack: they do
	// not degrade this one.
	OthersGaps []string `json:"others_gaps"`
	States     []struct {
		Topic   string         `json:"topic"`
		Payload string         `json:"payload"`
		Want    map[string]any `json:"want"`
	} `json:"states"`
	Calls []struct {
		ID   string         `json:"id"`
		Args map[string]any `json:"args"`
		Want []Published    `json:"want"`
	} `json:"calls"`
	Risk map[string]string `json:"risk"` // entry id -> risk
}

func (c *corpusCase) payload(t *testing.T) []byte {
	t.Helper()
	if c.File == "" {
		return c.Payload
	}
	b, err := os.ReadFile(filepath.Join("testdata", c.File))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	b, err := os.ReadFile("testdata/ha/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []corpusCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// corpusHouse is the house with what the devices received on the
// command topics.
type corpusHouse struct {
	*house
	cmds *commandLog
}

func startCorpusHouse(t *testing.T, commandTopics map[string]bool) *corpusHouse {
	t.Helper()
	h := &corpusHouse{house: runHouse(t, houseOptions{})}
	h.cmds = h.watchCommands(t, func(topic string) bool { return commandTopics[topic] })
	return h
}

// call runs an action and checks that exactly want arrives, in order, and
// that Preview (what a test run shows) says the same.
func (h *corpusHouse) call(t *testing.T, id string, args map[string]any, want []Published) {
	t.Helper()
	if want == nil {
		want = []Published{}
	}
	if pv, err := h.c.Preview(context.Background(), id, args); err != nil || !samePublished(pv, want) {
		t.Errorf("Preview %s %v = %v, %v; want %v", id, args, pv, err, want)
	}
	got, err := h.cmds.during(len(want), func() error { return h.c.Call(context.Background(), id, args) })
	if err != nil {
		t.Errorf("%s %v: %v", id, args, err)
		return
	}
	if !samePublished(got, want) {
		t.Errorf("%s %v published %v, want %v", id, args, got, want)
	}
}

// samePublished compares messages exactly, except that two JSON objects
// with the same members are the same (a producer parses JSON: Home
// Assistant's member order is not ours, and no consumer reads it).
func samePublished(got, want []Published) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Topic != want[i].Topic || got[i].URL != want[i].URL {
			return false
		}
		if got[i].Payload == want[i].Payload {
			continue
		}
		var g, w map[string]any
		if json.Unmarshal([]byte(got[i].Payload), &g) != nil || json.Unmarshal([]byte(want[i].Payload), &w) != nil || !reflect.DeepEqual(g, w) {
			return false
		}
	}
	return true
}

// TestHACorpus publishes every config of the corpus over the embedded
// broker, then each config's state payloads and commands, and checks the
// states, the exact payloads, the risks and how faithfully each config is
// modelled; it prints the faithful / degraded / dropped counts.
func TestHACorpus(t *testing.T) {
	cs := loadCorpus(t)
	cmds := map[string]bool{}
	for _, c := range cs {
		for _, call := range c.Calls {
			for _, w := range call.Want {
				cmds[w.Topic] = true
			}
		}
	}
	h := startCorpusHouse(t, cmds)
	for i := range cs {
		if err := h.pub.Publish(context.Background(), cs[i].Topic, cs[i].payload(t), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]int{}
	producers := map[string]int{}
	for i := range cs {
		c := &cs[i]
		producers[c.Producer]++
		t.Run(fmt.Sprintf("%02d_%s", i, c.Device), func(t *testing.T) {
			got := h.checkCase(t, c)
			counts[got]++
			if got != c.Expect {
				t.Errorf("%s (%s): %s, want %s", c.Topic, c.Producer, got, c.Expect)
			}
		})
	}
	var ps []string
	for p, n := range producers {
		ps = append(ps, fmt.Sprintf("%s %d", p, n))
	}
	sort.Strings(ps)
	if os.Getenv("CORPUS_IDS") != "" {
		for _, e := range h.c.Snapshot().Entries() {
			t.Logf("%s %s %s", e.Kind, e.ID, e.Risk)
		}
	}
	if len(cs) < 60 || len(producers) < 10 {
		t.Errorf("the corpus has %d configs from %d producers, want at least 60 from 10", len(cs), len(producers))
	}
	t.Logf("corpus: %d configs from %d producers (%s): faithful %d, degraded %d, dropped %d",
		len(cs), len(producers), strings.Join(ps, ", "), counts["faithful"], counts["degraded"], counts["dropped"])
}

// checkCase checks one config and returns how it is modelled.
func (h *corpusHouse) checkCase(t *testing.T, c *corpusCase) string {
	t.Helper()
	if c.Source == "" || c.Producer == "" {
		t.Errorf("%s: no producer or source", c.Topic)
	}
	if c.Expect == "dropped" {
		h.waitGap(t, c)
		return "dropped"
	}
	h.waitID(t, c.Device)
	for _, s := range c.States {
		for id, want := range s.Want {
			h.liveOf(t, s.Topic, s.Payload, id, want)
		}
	}
	for _, call := range c.Calls {
		h.waitID(t, call.ID)
		h.call(t, call.ID, call.Args, call.Want)
	}
	snap := h.c.Snapshot()
	for id, want := range c.Risk {
		if e, ok := snap.Get(id); !ok || string(e.Risk) != want {
			t.Errorf("%s (found %v) risk %v, want %s", id, ok, e.Risk, want)
		}
	}
	dev, _ := snap.Get(c.Device)
	if c.Gap != "" {
		if !strings.Contains(dev.Description, c.Gap) {
			t.Errorf("%s: description %q lacks %q", c.Device, dev.Description, c.Gap)
		}
		return "degraded"
	}
	if _, gaps, ok := strings.Cut(strings.TrimSuffix(dev.Description, "."), " Not fully modelled: "); ok {
		for _, g := range strings.Split(gaps, "; ") {
			if !slices.Contains(c.OthersGaps, g) {
				t.Errorf("%s: %s", c.Device, dev.Description)
				return "degraded"
			}
		}
	}
	return "faithful"
}

// waitGap waits until the log says what the dropped config lacks.
func (h *corpusHouse) waitGap(t *testing.T, c *corpusCase) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, c.Topic+": a log line saying "+strconv.Quote(c.Gap), func() bool {
		return strings.Contains(h.logs.String(), c.Gap)
	})
}
