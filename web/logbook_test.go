package web

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

func (f *fixture) availability(dev string, online bool) {
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/" + dev + "/availability",
		Payload: []byte(`{"state":"` + map[bool]string{true: "online", false: "offline"}[online] + `"}`)})
}

// logRowsOf are the entry texts of a logbook list, in page order.
var logEntryRE = regexp.MustCompile(`<td data-label="Entry">([^<]*)`)

func logRowsOf(body string) []string {
	var out []string
	for _, m := range logEntryRE.FindAllStringSubmatch(body, -1) {
		out = append(out, strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[1]), "·")))
	}
	return out
}

// TestLogbookPage: the logbook lists firings, deploys, availability
// changes and the server's start, newest first, filtered by kind, device,
// area and rule; device and rule pages show their own.
func TestLogbookPage(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	f.availability("hall_motion", true)
	f.motion(true) // online: an offline device fires nothing
	testutil.Eventually(t, 10*time.Second, "the firing", func() bool { return len(f.firings("hall-motion-light")) == 1 })
	f.availability("hall_motion", false)
	f.e.FlushLogbook()
	c := f.client()
	_, body, _ := c.get("/logbook")
	all := logRowsOf(body)
	want := []string{"hall_motion went offline", "hall-motion-light fired: success", "rule hall-motion-light installed (by owner)", "Pilothouse started: 0 rules armed"}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("logbook: %q, want %q", all, want)
	}
	mustContain(t, "logbook", body, `aria-current="page">Logbook</a>`, `<option value="availability" title=`, `<option>hall_motion</option>`,
		`href="/devices/hall_motion">hall_motion</a>`, `href="/rules/hall-motion-light">hall-motion-light</a>`, `data-log-live`,
		`<span class="badge st-bad">availability</span>`, `/static/logbook.js`)
	for _, tc := range []struct{ query, want string }{
		{"kind=availability", "[hall_motion went offline]"},
		{"device=hall_motion", "[hall_motion went offline]"},
		{"rule=hall-motion-light", "[hall-motion-light fired: success rule hall-motion-light installed (by owner)]"},
		{"kind=server", "[Pilothouse started: 0 rules armed]"},
		{"kind=bogus", fmt.Sprint(want)}, // an unknown kind filters nothing
	} {
		_, body, _ := c.get("/logbook?" + tc.query)
		if got := fmt.Sprint(logRowsOf(body)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.query, got, tc.want)
		}
	}
	_, body, _ = c.get("/logbook?kind=event")
	mustContain(t, "nothing matches", body, "Nothing in the logbook matches.", `href="/logbook">Reset</a>`)
	_, body, _ = c.get("/devices/hall_motion")
	mustContain(t, "device page", body, `<h2 id="log-h">Logbook</h2>`, `href="/logbook?device=hall_motion">All in the logbook`)
	if got := fmt.Sprint(logRowsOf(body)); got != "[hall_motion went offline]" {
		t.Errorf("device page logbook: %s", got)
	}
	_, body, _ = c.get("/rules/hall-motion-light")
	if got := fmt.Sprint(logRowsOf(body)); got != "[hall-motion-light fired: success rule hall-motion-light installed (by owner)]" {
		t.Errorf("rule page logbook: %s", got)
	}
	if code, _, _ := c.get("/logbook?cursor=x"); code != http.StatusBadRequest {
		t.Errorf("a bad cursor: %d", code)
	}
}

// TestLogbookPages: older entries are a link away, and the pages together
// list every entry once.
func TestLogbookPages(t *testing.T) {
	f := newFixture(t, nil)
	for i := range logPageSize + 5 {
		f.availability("hall_motion", i%2 == 0)
	}
	f.e.FlushLogbook()
	c := f.client()
	_, body, _ := c.get("/logbook?device=hall_motion")
	first := logRowsOf(body)
	older := regexp.MustCompile(`href="([^"]+)" id="log-older"`).FindStringSubmatch(body)
	if len(first) != logPageSize || older == nil {
		t.Fatalf("first page: %d entries, older link %v", len(first), older)
	}
	_, body, _ = c.get(strings.ReplaceAll(older[1], "&amp;", "&"))
	second := logRowsOf(body)
	mustContain(t, "second page", body, `id="log-newest"`)
	mustNotContain(t, "second page", body, `id="log-older"`, `data-log-live`)
	if len(first)+len(second) != logPageSize+4 { // the first report is no change
		t.Fatalf("pages: %d + %d entries", len(first), len(second))
	}
}

// TestLogbookStream: an open logbook stream carries new entries.
func TestLogbookStream(t *testing.T) {
	f := newFixture(t, nil)
	lines := openStreamAt(t, f.client(), "/events?logbook=1")
	f.availability("hall_motion", true)
	f.availability("hall_motion", false)
	got := until(t, lines, "went offline")
	last := got[len(got)-1]
	for _, w := range []string{`"kind":"availability"`, `"device":"hall_motion"`, `"class":"st-bad"`, `"when":"`} {
		if !strings.Contains(last, w) {
			t.Errorf("stream entry %s: missing %s", last, w)
		}
	}
}
