package web

import (
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestOwnerSeesGuestRuns: a rule a guest installed fires; the owner (an
// administrator) finds its deploy and firing on the Runs page and the
// rule's page; another principal finds neither.
func TestOwnerSeesGuestRuns(t *testing.T) {
	ps := []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken(guestTok), Deploy: true},
		{Name: "other", TokenHash: engine.HashToken("other-secret")},
	}
	f := newFixture(t, ps)
	dep := f.deploy(ps[1], motionRule)
	f.motion(true)
	testutil.Eventually(t, 5*time.Second, "the guest's rule to fire", func() bool { return len(f.firings("hall-motion-light")) > 0 })
	firing := f.firings("hall-motion-light")[0].ID

	owner := f.client()
	owner.login(ownerTok)
	_, body, _ := owner.get("/runs")
	mustContain(t, "owner's runs", body, dep.RunID, firing)
	_, body, _ = owner.get("/rules/hall-motion-light")
	mustContain(t, "owner's view of the guest's rule", body, firing)

	other := f.client()
	other.login("other-secret")
	_, body, _ = other.get("/runs")
	mustNotContain(t, "another principal's runs", body, dep.RunID, firing)
}
