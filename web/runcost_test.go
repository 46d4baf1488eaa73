package web

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestRunPageCostIsWhatItShows: a run whose steps hold large values (1000
// calls of an automation setting strings of '<') costs the page what it
// shows, not what the run holds: values past the page's budget are not
// indented at all, one over its cap only up to the cap.
func TestRunPageCostIsWhatItShows(t *testing.T) {
	big := json.RawMessage(`{"v":"` + strings.Repeat("<", 40000) + `"}`)
	tr := &pilotage.TraceResponse{RunID: "run_x", Output: big, Trace: &pilotage.Trace{Level: pilotage.LevelFull}}
	for i := range 1000 {
		tr.Trace.Steps = append(tr.Trace.Steps, pilotage.TraceStep{ID: "c#" + string(rune('0'+i%10)), Input: big, Output: big, Outcome: pilotage.Outcome{OK: true}})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var d runData
	d.rows(tr)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("the page's rows allocated %d bytes for a run of %d bytes of values; the page shows at most %d", alloc, 2001*len(big), maxShownBytes)
	}
	if got := d.Steps[0].In; got == nil || len(got.Text) != maxValueShown || got.More == 0 {
		t.Errorf("first value: %d bytes shown, %d more; want %d shown and the rest counted", len(got.Text), got.More, maxValueShown)
	}
	if got := d.Steps[999].Out; got == nil || got.Text != "" || got.More != len(big) {
		t.Errorf("a value past the budget: %q shown, %d more; want none shown and its %d bytes counted", got.Text, got.More, len(big))
	}
}

func TestIndentUpToMatchesIndent(t *testing.T) {
	for _, src := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}],"c":{},"d":[],"e":"x\"y,{}"}`, `"s"`, `12`, `[{"k":"é<>&"}]`} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(src), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got, rest := indentUpTo([]byte(src), 1<<20); got != want.String() || rest != 0 {
			t.Errorf("%s: got %q rest %d, want %q", src, got, rest, want.String())
		}
	}
}
