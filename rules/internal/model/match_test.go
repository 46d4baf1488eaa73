package model

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"

	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

func f(v float64) *float64 { return &v }

func TestMatchTrigger(t *testing.T) {
	to := func(v any) Value { return Value{Set: true, V: v} }
	cases := []struct {
		name          string
		trig          Trigger
		prev, cur     any
		event         bool
		matched, hold bool
	}{
		{"state any change", Trigger{Kind: TriggerState}, false, true, false, true, false},
		{"state no change", Trigger{Kind: TriggerState}, true, true, false, false, false},
		{"state to matches", Trigger{Kind: TriggerState, To: to(true)}, false, true, false, true, true},
		{"state to other", Trigger{Kind: TriggerState, To: to(true)}, true, false, false, false, false},
		{"state from gate", Trigger{Kind: TriggerState, To: to("ON"), From: to("OFF")}, "TOGGLE", "ON", false, false, true},
		{"state from and to", Trigger{Kind: TriggerState, To: to("ON"), From: to("OFF")}, "OFF", "ON", false, true, true},
		{"state numbers by value", Trigger{Kind: TriggerState, To: to(1.0)}, 0, 1, false, true, true},
		{"state still holding", Trigger{Kind: TriggerState, To: to(true)}, true, true, false, false, true},
		{"numeric crosses above", Trigger{Kind: TriggerNumeric, Above: f(25)}, 24.5, 25.5, false, true, true},
		{"numeric stays above", Trigger{Kind: TriggerNumeric, Above: f(25)}, 26.0, 27.0, false, false, true},
		{"numeric leaves", Trigger{Kind: TriggerNumeric, Above: f(25)}, 26.0, 24.0, false, false, false},
		{"numeric band", Trigger{Kind: TriggerNumeric, Above: f(10), Below: f(20)}, 25.0, 15.0, false, true, true},
		{"numeric text value", Trigger{Kind: TriggerNumeric, Below: f(5)}, "7", "3.5", false, true, true},
		{"numeric not a number", Trigger{Kind: TriggerNumeric, Below: f(5)}, 7.0, "n/a", false, false, false},
		{"event any", Trigger{Kind: TriggerEvent}, nil, "single", true, true, false},
		{"event value", Trigger{Kind: TriggerEvent, To: to("on")}, nil, "on", true, true, false},
		{"event other value", Trigger{Kind: TriggerEvent, To: to("on")}, nil, "off", true, false, false},
		{"event needs an event", Trigger{Kind: TriggerEvent}, nil, "on", false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &Interner{Entry: func(string) *pilotage.Entry { return nil }}
			rt := in.trigger(&tc.trig)
			m, h := rt.Match(tc.prev, tc.cur, tc.event)
			if m != tc.matched || h != tc.hold {
				t.Fatalf("matchTrigger = (%v, %v), want (%v, %v)", m, h, tc.matched, tc.hold)
			}
		})
	}
}

// TestKeeps: a held window stays open as Home Assistant's does.
func TestKeeps(t *testing.T) {
	v := func(x any) Value { return Value{Set: true, V: x} }
	cases := []struct {
		name               string
		trig               Trigger
		left, entered, cur any
		keeps              bool
	}{
		{"from alone: a third value", Trigger{Kind: TriggerState, From: v("heat")}, "heat", "auto", "off", true},
		{"from alone: back in from", Trigger{Kind: TriggerState, From: v("heat")}, "heat", "auto", "heat", false},
		{"from list: back in the value left", Trigger{Kind: TriggerState, From: v([]any{"heat", "off"})}, "heat", "auto", "heat", false},
		{"from list: another from value", Trigger{Kind: TriggerState, From: v([]any{"heat", "off"})}, "heat", "auto", "off", true},
		{"from and not_to: a third value", Trigger{Kind: TriggerState, From: v("heat"), NotTo: v("off")}, "heat", "auto", "off", true},
		{"to: still entered", Trigger{Kind: TriggerState, To: v("auto")}, "heat", "auto", "auto", true},
		{"to list: another listed value", Trigger{Kind: TriggerState, To: v([]any{"auto", "off"})}, "heat", "auto", "off", false},
		{"from and to: a third value", Trigger{Kind: TriggerState, From: v("heat"), To: v("auto")}, "heat", "auto", "off", false},
		{"not_to: another allowed value", Trigger{Kind: TriggerState, NotTo: v("off")}, "off", "heat", "auto", false},
		{"any change: a change", Trigger{Kind: TriggerState}, "off", "heat", "auto", false},
		{"numbers by value", Trigger{Kind: TriggerState, To: v(1.0)}, 0, 1, "1", true},
		{"numeric: still in range", Trigger{Kind: TriggerNumeric, Below: f(5)}, 7.0, 3.0, 4.0, true},
		{"numeric: left the range", Trigger{Kind: TriggerNumeric, Below: f(5)}, 7.0, 3.0, 6.0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &Interner{Entry: func(string) *pilotage.Entry { return nil }}
			rt := in.trigger(&tc.trig)
			if got := rt.Keeps(tc.left, tc.entered, tc.cur); got != tc.keeps {
				t.Fatalf("Keeps(%v, %v, %v) = %v, want %v", tc.left, tc.entered, tc.cur, got, tc.keeps)
			}
		})
	}
}

func TestTimeOfDaySpec(t *testing.T) {
	for in, want := range map[string]string{"07:30": "0 30 7 * * *", "00:00": "0 0 0 * * *", "23:05:09": "9 5 23 * * *", "18:00:00": "0 0 18 * * *"} {
		if got := TimeOfDaySpec(in); got != want {
			t.Errorf("timeOfDaySpec(%q) = %q, want %q", in, got, want)
		}
		if _, err := clock.ParseCron(TimeOfDaySpec(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}
