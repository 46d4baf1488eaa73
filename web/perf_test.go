package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// Render budget: every page renders server-side within this, with
// perfRules installed rules and perfRuns stored runs.
const (
	renderBudget = 100 * time.Millisecond
	perfRules    = 1000
	perfRuns     = 10000
)

type bigHouse struct {
	h      http.Handler
	cookie *http.Cookie
	runID  string
}

// populate builds a real engine on SQLite with perfRules rules and
// perfRuns runs written through the storage API directly: one rule is
// deployed for real, its promoted program is cloned under new names, and
// a real firing's envelope is copied into every run.
func populate(tb testing.TB) *bigHouse {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	store, err := storage.Open(ctx, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	devs := devices.NewCatalog(devices.Options{Logger: quiet()})
	devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(bridge)})

	prog, tmplRun := templates(tb, devs, store)
	var body map[string]any
	_ = json.Unmarshal(prog.Body, &body)
	names := make([]string, perfRules)
	for i := range perfRules {
		name := fmt.Sprintf("rule-%04d", i)
		names[i] = name
		body["name"] = name
		b, _ := json.Marshal(body)
		p := prog
		p.Ref, p.Name, p.Body, p.CreatedAt = fmt.Sprintf("automation.%s@%012x", name, i), name, b, time.Time{}
		if err := store.InstallRule(ctx, p, storage.Rule{Name: name, Principal: "owner", Enabled: i%10 != 0, Params: []byte(`{}`)}); err != nil {
			tb.Fatal(err)
		}
	}
	base := time.Now().Add(-24 * time.Hour)
	kinds := []string{"firing", "firing", "firing", "test", "deploy"}
	batch := make([]storage.Run, 0, 1000)
	for i := range perfRuns {
		r := tmplRun
		r.ID = storage.NewRunID()
		r.Kind = kinds[i%len(kinds)]
		r.Started = base.Add(time.Duration(i) * 8 * time.Second)
		r.Ended = r.Started.Add(time.Millisecond)
		r.Expires = time.Now().Add(30 * 24 * time.Hour) // engine.Trace treats a zero expiry as expired
		if r.Kind == "firing" {
			r.Rule = names[i%perfRules]
		} else {
			r.Rule = ""
		}
		if i%7 == 0 {
			r.Status, r.OK = "failed", false
		}
		r.Envelope = []byte(strings.Replace(string(tmplRun.Envelope), tmplRun.ID, r.ID, 1))
		batch = append(batch, r)
		if len(batch) == cap(batch) {
			if err := store.InsertRuns(ctx, batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	e := engine.New(engine.Config{}, devs, store, quiet())
	if err := e.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	h := Handler(e, Options{Logger: quiet()})
	// A first request mints the (owner) session cookie.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/devices", nil))
	cookies := rec.Result().Cookies()
	if len(cookies) == 0 {
		tb.Fatal("no session cookie")
	}
	last, _ := store.ListRuns(ctx, storage.RunFilter{Kind: "firing", Limit: 1})
	return &bigHouse{h: h, cookie: cookies[0], runID: last[0].ID}
}

// templates deploys one rule for real and fires it once: its promoted
// program and the firing's run are what populate clones.
func templates(tb testing.TB, devs *devices.Catalog, store *storage.Store) (storage.Program, storage.Run) {
	tb.Helper()
	ctx := context.Background()
	e1 := engine.New(engine.Config{}, devs, store, quiet())
	if err := e1.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	resp, err := e1.Execute(ctx, engine.ExecuteRequest{Program: json.RawMessage(motionRule)})
	if err != nil || !resp.Outcome.OK {
		tb.Fatalf("deploy: %v %+v", err, resp)
	}
	devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"occupancy":true}`)})
	var tmplRun storage.Run
	testutil.Eventually(tb, 5*time.Second, "the template firing", func() bool {
		e1.Flush()
		runs, _ := store.ListRuns(ctx, storage.RunFilter{Kind: "firing", Limit: 1})
		if len(runs) == 1 {
			tmplRun = runs[0]
		}
		return len(runs) == 1
	})
	e1.Close()
	prog, err := store.GetProgram(ctx, resp.Output.(*pilotage.DeployOutput).ProgramRef)
	if err != nil {
		tb.Fatal(err)
	}
	return prog, tmplRun
}

func (b *bigHouse) pages() []string {
	return []string{"/", "/rules/rule-0500", "/runs", "/runs?outcome=failed&kind=firing", "/runs?rule=rule-0007",
		"/runs/" + b.runID, "/devices"}
}

func (b *bigHouse) get(tb testing.TB, path string) (time.Duration, int) {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	req.AddCookie(b.cookie)
	rec := httptest.NewRecorder()
	t0 := time.Now()
	b.h.ServeHTTP(rec, req)
	d := time.Since(t0)
	if rec.Code != 200 {
		tb.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	return d, rec.Body.Len()
}

// TestRenderBudget measures every page with 1,000 rules and 10,000 runs
// and holds the median to renderBudget.
func TestRenderBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("populates 1,000 rules and 10,000 runs")
	}
	if raceEnabled {
		t.Skip("render timings are meaningless under the race detector: run go test ./web -run TestRenderBudget -v")
	}
	b := populate(t)
	budget := renderBudget
	for _, p := range b.pages() {
		var ds []time.Duration
		size := 0
		for range 9 {
			d, n := b.get(t, p)
			ds = append(ds, d)
			size = n
		}
		slices.Sort(ds)
		med := ds[len(ds)/2]
		t.Logf("%-36s median %8v  max %8v  %7d bytes", p, med.Round(10*time.Microsecond), ds[len(ds)-1].Round(10*time.Microsecond), size)
		if med > budget {
			t.Errorf("%s: median render %v over the %v budget", p, med, budget)
		}
	}
}

func BenchmarkPages(b *testing.B) {
	h := populate(b)
	for _, p := range h.pages() {
		name := strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_")
		if name == "" {
			name = "rules_list"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				h.get(b, p)
			}
		})
	}
}
