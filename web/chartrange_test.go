package web

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

func TestPickWindow(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tz data")
	}
	c := newClock(paris)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, q  string
		from, to time.Time
		custom   bool
		note     string
	}{
		{"default", "", now.Add(-24 * time.Hour), now, false, ""},
		{"preset", "range=1h", now.Add(-time.Hour), now, false, ""},
		{"unknown preset", "range=forever", now.Add(-24 * time.Hour), now, false, "Unknown range"},
		{"form in the house's zone", "from=2026-03-01T09:00&to=2026-03-01T10:30", time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC), true, ""},
		{"drag in Unix seconds", "from=" + strconv.FormatInt(now.Add(-time.Hour).Unix(), 10) + "&to=" + strconv.FormatInt(now.Add(-30*time.Minute).Unix(), 10), now.Add(-time.Hour), now.Add(-30 * time.Minute), true, ""},
		{"from alone: until now", "from=2026-03-01T12:00", time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), now, true, ""},
		{"not a time", "from=yesterday&to=today", now.Add(-24 * time.Hour), now, false, "not a time"},
		{"backwards", "from=2026-03-01T10:00&to=2026-03-01T09:00", now.Add(-24 * time.Hour), now, false, "1 minute to 400 days"},
		{"too long", "from=2020-01-01T00:00&to=2026-03-01T09:00", now.Add(-24 * time.Hour), now, false, "1 minute to 400 days"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.q)
			w := c.pickWindow(q, now)
			if !w.from.Equal(tc.from) || !w.to.Equal(tc.to) || w.custom != tc.custom {
				t.Errorf("got %v–%v custom %v, want %v–%v custom %v", w.from, w.to, w.custom, tc.from, tc.to, tc.custom)
			}
			if (tc.note == "") != (w.note == "") || !strings.Contains(w.note, tc.note) {
				t.Errorf("note %q, want %q", w.note, tc.note)
			}
		})
	}
}

var chartDataRE = regexp.MustCompile(`<script type="application/json" id="chart-data">(.*?)</script>`)

// TestChartsGapWhileServerDown: history recorded before a stop, then the
// server down for 50 minutes: the line chart has a null where the server
// stopped (no value held across the gap), the band holds nothing during
// it, and the page sends the gap for the charts to hatch.
func TestChartsGapWhileServerDown(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now()
	store, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var pts []storage.HistoryPoint
	for ts := now.Add(-2 * time.Hour); ts.Before(now.Add(-55 * time.Minute)); ts = ts.Add(5 * time.Minute) {
		pts = append(pts, storage.HistoryPoint{Entity: "hall_motion.illuminance", T: ts, IsNum: true, Num: 40},
			storage.HistoryPoint{Entity: "hall_motion.occupancy", T: ts, JSON: "true"})
	}
	if _, err := store.WriteHistory(ctx, pts, storage.HistoryWrite{}); err != nil {
		t.Fatal(err)
	}
	stop := now.Add(-50 * time.Minute)
	if err := store.SetMeta(ctx, "uptime", `{"start":0,"alive":`+strconv.FormatInt(stop.UnixMilli(), 10)+`}`); err != nil {
		t.Fatal(err)
	}
	store.Close()
	f := newFixtureWith(t, nil, dir, storage.Options{})
	f.e.FlushHistory()
	_, body, _ := f.client().get("/devices/hall_motion?range=24h")
	m := chartDataRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no chart data")
	}
	var cd struct {
		Gaps   [][2]int64 `json:"gaps"`
		Charts []struct {
			ID   string     `json:"id"`
			T    []int64    `json:"t"`
			Mean []*float64 `json:"mean"`
			Segs [][4]int64 `json:"segs"`
		} `json:"charts"`
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(m[1], `\u0026`, "&")), &cd); err != nil {
		t.Fatalf("%v: %s", err, m[1])
	}
	if len(cd.Gaps) != 1 || cd.Gaps[0][0] != stop.Unix() || math.Abs(float64(cd.Gaps[0][1]-now.Unix())) > 60 {
		t.Fatalf("gaps %v, want one from %d to about %d", cd.Gaps, stop.Unix(), now.Unix())
	}
	mustContain(t, "device page", body, "Hatched: the server was not running")
	for _, c := range cd.Charts {
		switch c.ID {
		case "hall_motion.illuminance":
			i := 0
			for i < len(c.T) && c.T[i] != stop.Unix() {
				i++
			}
			if i == len(c.T) || c.Mean[i] != nil || i == 0 || c.Mean[i-1] == nil {
				t.Errorf("line: no null at the stop %d after a value: t %v mean %v", stop.Unix(), c.T, c.Mean)
			}
		case "hall_motion.occupancy":
			for _, sg := range c.Segs {
				if sg[1] > stop.Unix() && sg[0] < cd.Gaps[0][1] {
					t.Errorf("band holds %v across the gap %v", sg, cd.Gaps[0])
				}
			}
		}
	}
}

// TestDefaultRangeFitsData: by default a fresh install's few minutes of
// history fill the charts; history older than a day keeps the 24 h range.
func TestDefaultRangeFitsData(t *testing.T) {
	fromOf := func(body string) int64 {
		t.Helper()
		m := chartDataRE.FindStringSubmatch(body)
		var cd struct {
			From int64 `json:"from"`
		}
		if m == nil || json.Unmarshal([]byte(m[1]), &cd) != nil {
			t.Fatal("no chart data")
		}
		return cd.From
	}
	f := newFixture(t, nil)
	f.motion(true)
	f.e.FlushHistory()
	now := time.Now()
	_, body, _ := f.client().get("/devices/hall_motion")
	// A numeric state is read in buckets of a day over DefaultHistoryPoints
	// (2 min): its first bucket may begin that much before its first value
	// (since the history records the values a start found, the
	// illuminance's too).
	bucket := 24 * time.Hour / engine.DefaultHistoryPoints
	if from := fromOf(body); from < now.Add(-minFitSpan-bucket-time.Minute).Unix() {
		t.Errorf("fresh install: charts from %v, want the last %v", time.Unix(from, 0), minFitSpan)
	}
	mustContain(t, "fresh install", body, "Fitted to the recorded data")

	old := []storage.HistoryPoint{{Entity: "hall_motion.illuminance", T: now.Add(-72 * time.Hour), IsNum: true, Num: 3}}
	if _, err := f.store.WriteHistory(context.Background(), old, storage.HistoryWrite{}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = f.client().get("/devices/hall_motion")
	if from := fromOf(body); from > now.Add(-23*time.Hour).Unix() {
		t.Errorf("three days of history: charts from %v, want 24 h back", time.Unix(from, 0))
	}
	mustContain(t, "a house with history", body, `href="/devices/hall_motion?range=24h" aria-current="page"`)
}
