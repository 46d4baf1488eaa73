package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// TestStoredFiringsBoundedByBytes: an attacker's rules that each keep 50
// firings of 4 MiB per outcome grew the database by over 100 MB a rule.
// A rule's stored firings now fit limits.max_stored_rule_bytes and a
// principal's max_stored_firing_bytes, the oldest going first, never a
// rule's newest (each firing here stores about 80 kB); what was deleted is counted for /healthz.
func TestStoredFiringsBoundedByBytes(t *testing.T) {
	const ruleMax, principalMax = 170 << 10, 300 << 10
	guest := &Principal{Name: "guest", TokenHash: HashToken("g"), Deploy: true}
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true, Admin: true}
	h := newHouse(t, Config{Principals: []*Principal{owner, guest}, Limits: rules.Limits{MaxStoredRuleBytes: ruleMax, MaxStoredFiringBytes: principalMax}})
	ctx := context.Background()
	for _, name := range []string{"big1", "big2"} {
		resp, err := h.eng.Execute(WithPrincipal(ctx, guest), ExecuteRequest{Program: json.RawMessage(`{"name":"` + name +
			`","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"v":"{{ repeat('x', 40000) }}"}}]}`)})
		if err != nil || !resp.Outcome.OK {
			t.Fatalf("deploy %s: %v %s", name, err, mustJSON(resp))
		}
	}
	seen := map[string]bool{}
	for i := range 6 {
		if err := h.sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": i%2 == 0}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 15*time.Second, "both rules' next firing stored", func() bool {
			fresh := 0
			for _, rule := range []string{"big1", "big2"} {
				if f := h.firings(rule); len(f) > 0 && !seen[f[0].ID] {
					fresh++
				}
			}
			return fresh == 2
		})
		for _, rule := range []string{"big1", "big2"} {
			seen[h.firings(rule)[0].ID] = true
		}
	}
	total := 0
	for _, rule := range []string{"big1", "big2"} {
		runs, err := h.store.ListRuns(ctx, storage.RunFilter{Rule: rule, Kind: storage.KindFiring, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		bytes := 0
		for _, r := range runs {
			bytes += len(r.Envelope)
		}
		if len(runs) == 0 || bytes > ruleMax {
			t.Errorf("%s keeps %d firings of %d bytes, want 1 or more within %d", rule, len(runs), bytes, ruleMax)
		}
		total += bytes
	}
	if total > principalMax {
		t.Errorf("the principal keeps %d bytes of firings, want at most %d", total, principalMax)
	}
	if st := h.eng.RecorderStats(); st.Trimmed == 0 || st.TrimmedPrincipal == 0 {
		t.Errorf("trims not counted: %+v", st)
	}
}

// TestRulesPerPrincipalCapped: a guest installed rules without bound. A
// deploy of a new rule past limits.max_rules_per_principal is now refused
// (resource_exhausted naming the limit, nothing installed); replacing one
// of its own rules still works, and an admin is not capped.
func TestRulesPerPrincipalCapped(t *testing.T) {
	guest := &Principal{Name: "guest", TokenHash: HashToken("g"), Deploy: true}
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true, Admin: true}
	h := newHouse(t, Config{Principals: []*Principal{owner, guest}, Limits: rules.Limits{MaxRulesPerPrincipal: 3}})
	prog := func(name string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","triggers":[{"id":"t","cron":"0 0 3 * * *"}],"steps":[{"id":"s","set":{"v":1}}]}`)
	}
	for _, tc := range []struct {
		who     *Principal
		name    string
		replace bool
		refused bool
	}{
		{guest, "g0", false, false}, {guest, "g1", false, false}, {guest, "g2", false, false},
		{guest, "g3", false, true},
		{guest, "g0", true, false},
		{owner, "o0", false, false}, {owner, "o1", false, false}, {owner, "o2", false, false}, {owner, "o3", false, false},
	} {
		req := ExecuteRequest{Program: prog(tc.name)}
		if tc.replace {
			req.Input = json.RawMessage(`{"install":{"replace":true}}`)
		}
		resp, err := h.eng.Execute(WithPrincipal(context.Background(), tc.who), req)
		var re *pilotage.RequestError
		switch {
		case tc.refused && (!errors.As(err, &re) || re.Kind != pilotage.ErrResourceExhausted || !strings.Contains(re.Message, "limits.max_rules_per_principal (3)")):
			t.Errorf("%s deploys %s: %v, want resource_exhausted naming limits.max_rules_per_principal (3)", tc.who.Name, tc.name, err)
		case !tc.refused && (err != nil || !resp.Outcome.OK):
			t.Errorf("%s deploys %s: %v %s", tc.who.Name, tc.name, err, mustJSON(resp))
		}
	}
	all, err := h.store.ListRules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range all {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "g0 g1 g2 o0 o1 o2 o3" {
		t.Errorf("installed %q, want the guest's first three and the owner's four", got)
	}
}

// TestLiveFiringsPerPrincipalBounded: a guest's parallel rules that each
// build a large value and wait took the server to 1.24 GB. Beyond
// limits.max_live_firings_per_principal running at once (over all its
// rules), a new firing is refused: recorded skipped with the limit named
// and counted; an admin has a bound of its own (max_live_firings_admin,
// TestOwnerLiveFiringsBounded); an ended firing gives its slot
// back.
func TestLiveFiringsPerPrincipalBounded(t *testing.T) {
	guest := &Principal{Name: "guest", TokenHash: HashToken("g"), Deploy: true}
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true, Admin: true}
	h := newHouse(t, Config{Principals: []*Principal{owner, guest}, Limits: rules.Limits{MaxLiveFiringsPerPrincipal: 3}})
	ctx := context.Background()
	for _, d := range []struct {
		who  *Principal
		name string
	}{{guest, "hold1"}, {guest, "hold2"}, {owner, "own"}} {
		resp, err := h.eng.Execute(WithPrincipal(ctx, d.who), ExecuteRequest{Program: json.RawMessage(`{"name":"` + d.name + `","mode":"parallel","max":10,
			"triggers":[{"id":"press","event":"bedroom_remote.action","value":"on"}],
			"steps":[{"id":"big","set":{"v":"{{ repeat('x', 1000) }}"}},{"id":"hold","delay":"10m"}]}`)})
		if err != nil || !resp.Outcome.OK {
			t.Fatalf("deploy %s: %v %s", d.name, err, mustJSON(resp))
		}
	}
	statuses := func(rule string) map[string]int {
		got := map[string]int{}
		for _, r := range h.firings(rule) {
			got[r.Status]++
		}
		return got
	}
	for range 2 {
		if err := h.sim.Press(ctx, "on"); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 15*time.Second, "the guest's 3 firings running, 1 refused; the owner's 2 running", func() bool {
		g1, g2, o := statuses("hold1"), statuses("hold2"), statuses("own")
		return g1["running"]+g2["running"] == 3 && g1["skipped"]+g2["skipped"] == 1 && o["running"] == 2
	})
	for _, rule := range []string{"hold1", "hold2"} {
		for _, r := range h.firings(rule) {
			if env := string(r.Envelope); r.Status == "skipped" && !strings.Contains(env, "limits.max_live_firings_per_principal") {
				t.Errorf("the refused firing does not name the limit: %s", env)
			}
		}
	}
	if n := h.eng.RunStats().FiringsRefused; n != 1 {
		t.Errorf("firings_refused %d, want 1", n)
	}
	// Removing hold2 ends its firings, whose slots go back to the guest.
	if _, err := h.eng.RemoveRule(ctx, "hold2"); err != nil {
		t.Fatal(err)
	}
	before := statuses("hold1")["running"]
	testutil.Eventually(t, 15*time.Second, "hold2's firings ended, their slots given back", func() bool {
		return h.eng.sched.Live().Running(guest.Name) == int64(before)
	})
	if err := h.sim.Press(ctx, "on"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "hold1 runs one more firing", func() bool {
		return statuses("hold1")["running"] == before+1
	})
	if n := h.eng.RunStats().FiringsRefused; n != 1 {
		t.Errorf("firings_refused %d after the slots were given back, want 1", n)
	}
}

// TestQueuedFiringsCountAsLive: a queued firing holds its trigger's value
// (up to a whole message), so it counts against its principal's live
// firings: a guest's rule in mode queued with max 1000 took the server to
// 1 GB with none refused. Removing the rule gives the queued ones back.
func TestQueuedFiringsCountAsLive(t *testing.T) {
	guest := &Principal{Name: "guest", TokenHash: HashToken("g"), Deploy: true}
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true, Admin: true}
	h := newHouse(t, Config{Principals: []*Principal{owner, guest}, Limits: rules.Limits{MaxLiveFiringsPerPrincipal: 3}})
	ctx := context.Background()
	resp, err := h.eng.Execute(WithPrincipal(ctx, guest), ExecuteRequest{Program: json.RawMessage(`{"name":"queue","mode":"queued","max":1000,
		"triggers":[{"id":"press","event":"bedroom_remote.action","value":"on"}],
		"steps":[{"id":"hold","delay":"10m"}]}`)})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("deploy: %v %s", err, mustJSON(resp))
	}
	for range 6 {
		if err := h.sim.Press(ctx, "on"); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 15*time.Second, "1 running, 2 queued, 3 refused", func() bool {
		skipped := 0
		for _, r := range h.firings("queue") {
			if r.Status == "skipped" && strings.Contains(string(r.Envelope), "limits.max_live_firings_per_principal") {
				skipped++
			}
		}
		return skipped == 3 && h.eng.sched.Live().Running(guest.Name) == 3
	})
	if _, err := h.eng.RemoveRule(ctx, "queue"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "every live firing given back", func() bool {
		return h.eng.sched.Live().Running(guest.Name) == 0
	})
}
