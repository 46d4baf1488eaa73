package web

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestWhoDeployedWhat: with logins, the Rules and Runs lists say who
// installed and whom each run ran as, a deploy's page names its
// principal, and a guest who may not see the owner's firings is told so
// rather than "never".
func TestWhoDeployedWhat(t *testing.T) {
	f := newFixture(t, testPrincipals())
	resp := f.deploy(nil, motionRule)
	f.motion(true)
	testutil.Eventually(t, 10*time.Second, "a firing", func() bool { return len(f.firings("hall-motion-light")) > 0 })
	owner, guest := f.client(), f.client()
	owner.login(ownerTok)
	guest.login(guestTok)

	_, body, _ := guest.get("/")
	mustContain(t, "guest's rules", body, `<th scope="col">Installed by</th>`, `<td data-label="Installed by" data-cell="by">owner</td>`, ">not visible to you</span>")
	mustNotContain(t, "guest's rules", body, `<span class="sub">never</span>`)
	_, body, _ = guest.get("/rules/hall-motion-light")
	mustContain(t, "guest's rule page", body, "Its firings are not visible to you: they run as owner")
	mustNotContain(t, "guest's rule page", body, "No firings yet.")

	_, body, _ = owner.get("/")
	mustContain(t, "owner's rules", body, `<td data-label="Installed by" data-cell="by">owner</td>`, `<td data-label="Last fired" data-cell="last"><a href="/runs/`)
	mustNotContain(t, "owner's rules", body, "not visible to you")
	_, body, _ = owner.get("/runs")
	mustContain(t, "runs", body, `<th scope="col">By</th>`, `data-who`, `<td data-label="By">owner</td>`)
	runs, err := f.e.ListRuns(engine.WithPrincipal(t.Context(), engine.Owner), engine.RunFilter{Kind: engine.KindDeploy, Limit: 1})
	if err != nil || len(runs) != 1 {
		t.Fatalf("deploy runs: %v %v (execute said %s)", runs, err, resp.RunID)
	}
	_, body, _ = owner.get("/runs/" + runs[0].ID)
	mustContain(t, "deploy run", body, `<dt>Deployed by</dt><dd id="run-principal">owner</dd>`)

	// Without logins nobody is told who: everyone is the owner.
	g := newFixture(t, nil)
	c := g.client()
	g.deploy(nil, motionRule)
	_, body, _ = c.get("/")
	if strings.Contains(body, "Installed by") || strings.Contains(body, "not visible") {
		t.Errorf("rules without logins: %.2000s", body)
	}
}
