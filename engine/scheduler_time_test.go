package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones below whatever the machine has installed

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// simClock is an engine clock a test moves.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *simClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// TestSchedulerAcrossDaylightSaving walks the scheduler's next firings on
// a simulated clock in Europe/Paris, each asked at the previous one as the
// cron runner does: "at 02:05" in the spring-forward gap runs at 03:00
// that day (it used to skip the day), "02:20" in the repeated hour of the
// fall-back runs once (it used to run twice), and the plan says so.
func TestSchedulerAcrossDaylightSaving(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	clock := &simClock{}
	h := newHouse(t, Config{TimeZone: paris, Now: clock.Now})
	ctx := context.Background()
	for _, tc := range []struct {
		name, at string
		from     time.Time
		want     []string
	}{
		{"spring", "02:05", time.Date(2026, 3, 28, 12, 0, 0, 0, paris), []string{"03-29 03:00 +02", "03-30 02:05 +02", "03-31 02:05 +02"}},
		{"fall", "02:20", time.Date(2026, 10, 24, 12, 0, 0, 0, paris), []string{"10-25 02:20 +02", "10-26 02:20 +01", "10-27 02:20 +01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock.set(tc.from)
			prog := `{"name":"dst-` + tc.name + `","triggers":[{"id":"night","at":"` + tc.at + `"}],"steps":[{"id":"x","stop":""}]}`
			v, err := h.eng.Validate(ctx, []byte(prog), nil)
			if err != nil || v.Plan == nil {
				t.Fatalf("validate: %v %+v", err, v)
			}
			if d := v.Plan.Steps[1].Description; !strings.Contains(d, "(Europe/Paris; on a daylight-saving change a skipped time runs once when the clock jumps forward, a repeated time once, the first time)") {
				t.Errorf("plan: %q", d)
			}
			h.deploy(prog)
			var got []string
			for range tc.want {
				ri, err := h.eng.GetRule(ctx, "dst-"+tc.name, 0)
				if err != nil || ri.NextFire == nil {
					t.Fatalf("rule: next %v (%v)", ri.NextFire, err)
				}
				got = append(got, ri.NextFire.Format("01-02 15:04 -07"))
				clock.set(*ri.NextFire)
			}
			if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
				t.Errorf("fires at %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSunTriggerRearmsThroughPolarNight: at Tromsø (69.65°N) in December
// the sun does not rise for weeks. A sunrise trigger deployed then says
// its next firing (the first sunrise, in January), keeps looking every
// day (s.sunRecheck, shortened here) and fires at that sunrise. It used
// to find no event within three days and was never armed again until a
// restart.
func TestSunTriggerRearmsThroughPolarNight(t *testing.T) {
	oslo, err := time.LoadLocation("Europe/Oslo")
	if err != nil {
		t.Fatal(err)
	}
	tromso := Location{Latitude: 69.6492, Longitude: 18.9553}
	clock := &simClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, oslo)}
	h := newHouse(t, Config{TimeZone: oslo, Location: &tromso, LocationSource: LocationConfigured, Now: clock.Now})
	h.eng.sched.SunRecheck = 20 * time.Millisecond // before the deploy arms the trigger
	h.deploy(`{"name":"polar-sunrise","triggers":[{"id":"dawn","sun":"sunrise"}],"steps":[{"id":"x","stop":""}]}`)
	ri, err := h.eng.GetRule(context.Background(), "polar-sunrise", 0)
	if err != nil || ri.NextFire == nil || ri.NextFire.Month() != time.January {
		t.Fatalf("next firing in polar night: %v (%v), want the first sunrise in January", ri.NextFire, err)
	}
	// Weeks pass: the simulated clock jumps to just before that sunrise;
	// the daily look finds it and the rule fires.
	clock.set(ri.NextFire.Add(-10 * time.Millisecond))
	testutil.Eventually(t, 5*time.Second, "the sunrise firing", func() bool { return len(h.firings("polar-sunrise")) > 0 })
	if n := len(h.firings("polar-sunrise")); n != 1 {
		t.Errorf("%d firings, want 1", n)
	}
}
