package web

import (
	"net/http/httptest"
	"sync"
	"testing"
)

// healthDoc is a settable Options.Counters.
type healthDoc struct {
	mu  sync.Mutex
	doc map[string]any
}

func (d *healthDoc) get() any { d.mu.Lock(); defer d.mu.Unlock(); return d.doc }

func (d *healthDoc) set(doc map[string]any) { d.mu.Lock(); d.doc = doc; d.mu.Unlock() }

// TestHealthPage: the health page says each non-zero counter of /healthz
// as a sentence with what to do, shows one the table lacks by its path
// (never hidden), keeps work as usual apart, and the header links to it
// with how many need a look.
func TestHealthPage(t *testing.T) {
	f := newFixture(t, nil)
	doc := &healthDoc{doc: map[string]any{"status": "ok", "logbook": map[string]any{"written": 12, "dropped": 0}}}
	srv := httptest.NewServer(Handler(f.e, Options{Logger: quiet(), Counters: doc.get}))
	defer srv.Close()
	c := f.client()
	c.base = srv.URL

	_, body, _ := c.get("/health")
	mustContain(t, "all well", body, `<a class="connlink" href="/health"`, `id="all-well"`, "12 logbook entries were written.")
	mustNotContain(t, "all well", body, `id="health-notes"`, "logbook.dropped")

	doc.set(map[string]any{"status": "ok",
		"logbook":  map[string]any{"written": 12, "dropped": 3, "cut": 0},
		"notify":   map[string]any{"phone": map[string]any{"sent": 4, "failed": 2}},
		"brandnew": map[string]any{"thing": 7}})
	_, body, _ = c.get("/")
	mustContain(t, "rules page", body, `id="health-notes">3 to look at</span>`)
	_, body, _ = c.get("/health")
	mustContain(t, "troubles", body,
		`id="note-logbook.dropped"`, "3 logbook entries were lost: the queue in front of its writer was full.", "What to do: A flood of events",
		`id="note-notify.phone.failed"`, "Channel phone gave up on 2 messages after retrying.",
		`id="note-brandnew.thing"`, "brandnew.thing = 7", "No explanation of this counter yet",
		`id="usual-notes"`, "Channel phone sent 4 messages.")
	mustNotContain(t, "troubles", body, "logbook.cut", "%!")
}

func TestKnowsCounter(t *testing.T) {
	for path, want := range map[string]bool{
		"logbook.dropped": true, "notify.phone.failed": true, "notify.*.sent": true,
		"logbook.nothing": false, "brandnew": false, "phone.notify.failed": false,
	} {
		if got := KnowsCounter(path); got != want {
			t.Errorf("KnowsCounter(%q) = %v, want %v", path, got, want)
		}
	}
}
