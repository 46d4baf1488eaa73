package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

// TestOverlapIsAboutWhatBothWrite: overlapping_rule warns when two rules
// write the same device from the same trigger, counting calls and
// triggers by selector as what they address in the caller's catalog now;
// two rules that only notify race nothing and get no warning.
func TestOverlapIsAboutWhatBothWrite(t *testing.T) {
	owner := &engine.Principal{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true,
		Approval: &engine.ApprovalPolicy{Require: []string{}}}
	s := newHTTPStackDevs(t, engine.Config{Principals: []*engine.Principal{owner}}, storage.Options{},
		devices.Options{Logger: quiet(), Notify: []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "pilothouse/notify/phone"}}})
	c := s.client("owner-token")
	rule := func(name, trigger, call, args string) string {
		return `{"name":"` + name + `","triggers":[{"id":"m","state":` + trigger + `,"to":true}],"steps":[{"id":"x","call":` + call + `,"args":` + args + `}]}`
	}
	const (
		motion   = `"hall_motion.occupancy"`
		byArea   = `{"area":"hall","property":"occupancy"}`
		light    = `"hall_light.set"`
		lights   = `{"area":"hall","type":"light","action":"set"}`
		notify   = `"notify.phone"`
		on       = `{"state":"ON"}`
		dim      = `{"brightness":40}`
		say      = `{"message":"someone is in the hall"}`
		noWarn   = ""
		overlaps = `rule "%s" also calls hall_light.set`
	)
	tests := []struct {
		name, installed, candidate, want string
	}{
		{"both notify", rule("say-1", motion, notify, say), rule("say-2", motion, notify, say), noWarn},
		{"installed calls by area", rule("area-on", motion, lights, on), rule("dim-1", motion, light, dim), overlaps},
		{"candidate calls by area", rule("id-on", motion, light, on), rule("dim-2", motion, lights, dim), overlaps},
		{"installed triggers by area", rule("area-trig", byArea, light, on), rule("dim-3", motion, light, dim), overlaps},
		{"candidate triggers by area", rule("id-trig", motion, light, on), rule("dim-4", byArea, light, dim), overlaps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.installed[len(`{"name":"`):strings.Index(tt.installed, `","`)]
			deployed(t, c, tt.installed)
			defer callTool(t, c, "pilothouse_rule_remove", map[string]any{"name": name})
			v := validate(t, c, tt.candidate)
			d := diagAt(v, "overlapping_rule", "/steps/0/call")
			switch {
			case v["valid"] != true:
				t.Fatalf("candidate: %s", js(v))
			case tt.want == noWarn && d != nil:
				t.Fatalf("a false overlap: %s", js(d))
			case tt.want != noWarn && (d == nil || !strings.Contains(d["message"].(string), strings.Replace(tt.want, "%s", name, 1))):
				t.Fatalf("want an overlap naming %s: %s", name, js(v))
			}
		})
	}
}
