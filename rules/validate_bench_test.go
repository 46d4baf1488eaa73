package rules

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// bigCatalog is the demo catalog plus n synthetic devices, each with a set
// action, an on/off state and a numeric state.
func bigCatalog(n int) *mapCatalog {
	demo := demoCatalog()
	entries := make([]*pilotage.Entry, 0, len(demo.m)+3*n)
	for _, id := range demo.ids {
		entries = append(entries, demo.m[id])
	}
	for i := 0; len(entries) < n; i++ {
		d := fmt.Sprintf("device_%04d", i)
		entries = append(entries,
			entry(d+".set", pilotage.KindAction, pilotage.RiskControl, lightSet, ""),
			entry(d+".state", pilotage.KindState, pilotage.RiskRead, "", onOff),
			entry(d+".power", pilotage.KindState, pilotage.RiskRead, "", `{"type":"number","minimum":0}`))
	}
	return newMapCatalog("big", entries...)
}

// fiftyStepProgram builds a program with 50 steps: calls with constant and
// templated args, conditions, ifs, a loop, waits and sets.
func fiftyStepProgram() []byte {
	var steps []string
	add := func(s string) { steps = append(steps, s) }
	add(`{"id":"s0","set":{"level":100}}`)
	for i := 1; len(steps) < 50; i++ {
		d := fmt.Sprintf("device_%04d", i*7)
		switch i % 5 {
		case 0:
			add(fmt.Sprintf(`{"id":"c%d","call":"%s.set","args":{"state":"ON","brightness":%d}}`, i, d, i))
		case 1:
			add(fmt.Sprintf(`{"id":"c%d","call":"%s.set","args":{"brightness":"{{ vars.level + %d }}"}}`, i, d, i))
		case 2:
			add(fmt.Sprintf(`{"id":"c%d","if":"state('%s.power') > %d && hour(now()) < 23","then":[{"id":"t%d","call":"%s.set","args":{"state":"OFF"}}],"else":[{"id":"e%d","delay":"1s"}]}`, i, d, i, i, d, i))
		case 3:
			add(fmt.Sprintf(`{"id":"c%d","wait":{"state":"%s.state","to":"ON","for":"10s"},"timeout":"1m","continue_on_timeout":true}`, i, d))
		case 4:
			add(fmt.Sprintf(`{"id":"c%d","repeat":{"count":2},"do":[{"id":"r%d","call":"%s.set","args":{"state":"TOGGLE"}}]}`, i, i, d))
		}
	}
	return []byte(`{"name":"bench","mode":"restart","triggers":[{"id":"go","state":"hall_motion.occupancy","to":true}],` +
		`"conditions":[{"id":"dark","expr":"state('hall_motion.illuminance') < 30"}],"steps":[` + strings.Join(steps, ",") + `]}`)
}

func TestFiftyStepProgramValid(t *testing.T) {
	res, err := Validate(fiftyStepProgram(), bigCatalog(5000), ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Fatalf("invalid: %s", diagString(res.Diagnostics))
	}
	if len(res.Program.Steps) != 50 {
		t.Fatalf("%d steps", len(res.Program.Steps))
	}
}

// BenchmarkValidate50Steps validates a 50-step program against a
// 5,000-entry catalog; it reports the p99 latency as p99-ns.
func BenchmarkValidate50Steps(b *testing.B) {
	cat := bigCatalog(5000)
	raw := fiftyStepProgram()
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := Validate(raw, cat, ValidateOptions{Cache: itCache})
		durs = append(durs, time.Since(t0))
		if err != nil || !res.Valid {
			b.Fatalf("%v %v", err, res)
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)*99/100].Nanoseconds()), "p99-ns")
}

// TestValidateConcurrent validates from several goroutines at once (the
// schema memo and the pooled expression configurations are shared).
func TestValidateConcurrent(t *testing.T) {
	cat := bigCatalog(5000)
	g, _ := GuideByID("cookbook")
	progs := append(guidePrograms(g.Body), string(fiftyStepProgram()))
	errs := make(chan string, 64)
	done := make(chan struct{})
	for w := 0; w < 8; w++ {
		go func(w int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 20; i++ {
				src := progs[(w+i)%len(progs)]
				res, err := Validate([]byte(src), cat, ValidateOptions{HasLocation: true, Cache: itCache})
				if err != nil {
					errs <- fmt.Sprintf("worker %d: %v", w, err)
					return
				}
				if !res.Valid {
					errs <- fmt.Sprintf("worker %d: %s", w, diagString(res.Diagnostics))
					return
				}
			}
		}(w)
	}
	for w := 0; w < 8; w++ {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
