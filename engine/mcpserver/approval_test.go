package mcpserver_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

// noApproval is a risk-gate policy that needs no approval, for tests of
// other things that deploy locks or notifications.
var noApproval = engine.ApprovalPolicy{Require: []string{}}

const (
	lockProg   = `{"name":"lock-night","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"lock","call":"front_lock.set","args":{"state":"LOCK"}}]}`
	lockProgB  = `{"name":"lock-night","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"lock","call":"front_lock.set","args":{"state":"UNLOCK"}}]}`
	porchProg  = `{"name":"porch-evening","triggers":[{"id":"t","at":"20:00"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`
	notifyProg = `{"name":"door-tell","triggers":[{"id":"o","state":"front_door.contact","to":false}],"steps":[{"id":"tell","call":"notify.phone","args":{"message":"door open"}}]}`
)

// gateHouse is the demo house behind MCP with an owner, a guest that is an
// approver (but never of its own requests), a principal whose policy
// pre-approves phone notifications, and a clock the test moves.
type gateHouse struct {
	*httpStack
	principals []*engine.Principal
	skew       atomic.Int64
}

func newGateHouse(t *testing.T) *gateHouse {
	g := &gateHouse{}
	g.principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Deploy: true, Approver: true},
		{Name: "notifier", TokenHash: engine.HashToken("notifier-token"), Deploy: true, Approval: &engine.ApprovalPolicy{PreApproved: []string{"notify.*"}}},
	}
	cfg := engine.Config{Principals: g.principals, WebURL: "http://house.test:8080",
		Now: func() time.Time { return time.Now().Add(time.Duration(g.skew.Load())) }}
	g.httpStack = newHTTPStackDevs(t, cfg, storage.Options{},
		devices.Options{Logger: quiet(), Notify: []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "pilothouse/notify/phone"}}})
	return g
}

// as is a context acting as the principal called name.
func (g *gateHouse) as(name string) context.Context {
	for _, p := range g.principals {
		if p.Name == name {
			return engine.WithPrincipal(context.Background(), p)
		}
	}
	g.t.Fatalf("no principal %s", name)
	return nil
}

// installed reports whether a rule of that name is installed.
func (g *gateHouse) installed(name string) bool {
	_, err := g.eng.GetRule(g.as("owner"), name, 0)
	return err == nil
}

// pending checks that r is an approval_pending answer an assistant can act
// on, and returns its approval id.
func pending(t *testing.T, r map[string]any) string {
	t.Helper()
	oc := r["outcome"].(map[string]any)
	ap, _ := r["approval"].(map[string]any)
	if oc["ok"] != false || oc["status"] != "approval_pending" || ap == nil || r["output"] != nil {
		t.Fatalf("want approval_pending: %s", js(r))
	}
	id := ap["id"].(string)
	if ap["url"] != "http://house.test:8080/approvals/"+id || ap["expires_at"] == nil || ap["status"] != "pending" ||
		!strings.Contains(oc["error"].(string), ap["url"].(string)) || step(r["trace"], "approval") == nil {
		t.Fatalf("the pending answer does not say where and until when: %s", js(r))
	}
	return id
}

func deployOf(t *testing.T, c *client.Client, src string) map[string]any {
	t.Helper()
	return execute(t, c, map[string]any{"program": prog(t, src)})
}

// TestRiskGateOverMCP: a security or external deploy installs nothing
// until a human other than the model approves it; the approval covers
// exactly that program, once, until it expires; control deploys and
// pre-approved entries pass without friction.
func TestRiskGateOverMCP(t *testing.T) {
	g := newGateHouse(t)
	guest, notifier := g.client("guest-token"), g.client("notifier-token")

	// Control risk: no approval.
	if r := deployOf(t, guest, porchProg); r["outcome"].(map[string]any)["ok"] != true || r["approval"] != nil {
		t.Fatalf("control deploy: %s", js(r))
	}
	// Pre-approved by policy: notify.* for notifier, not for guest.
	if r := deployOf(t, notifier, notifyProg); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("pre-approved notify: %s", js(r))
	}
	pending(t, deployOf(t, guest, strings.Replace(notifyProg, "door-tell", "door-tell-2", 1)))

	// Security: pending, nothing installed; asking again gives the same id.
	idA := pending(t, deployOf(t, guest, lockProg))
	if g.installed("lock-night") {
		t.Fatal("a pending deploy installed its rule")
	}
	if again := pending(t, deployOf(t, guest, lockProg)); again != idA {
		t.Errorf("asking again opened %s, want the pending %s", again, idA)
	}
	// The guest may approve others' requests, never its own.
	if _, err := g.eng.DecideApproval(g.as("guest"), idA, true, engine.ChannelWeb); !errors.Is(err, engine.ErrMayNotApprove) {
		t.Fatalf("guest approving its own request: %v", err)
	}
	if _, err := g.eng.DecideApproval(g.as("notifier"), idA, true, engine.ChannelWeb); !errors.Is(err, engine.ErrApprovalNotFound) {
		t.Fatalf("a non-approver deciding: %v", err)
	}
	if a, err := g.eng.DecideApproval(g.as("owner"), idA, true, engine.ChannelWeb); err != nil || a.Status != "approved" || a.DecidedBy != "owner" {
		t.Fatalf("owner approving: %+v %v", a, err)
	}
	// Program B cannot ride A's approval.
	idB := pending(t, deployOf(t, guest, lockProgB))
	if idB == idA || g.installed("lock-night") {
		t.Fatalf("program B: approval %s (A's %s), installed %v", idB, idA, g.installed("lock-night"))
	}
	// The retry of A installs it, and says who approved it.
	r := deployOf(t, guest, lockProg)
	if r["outcome"].(map[string]any)["ok"] != true || !strings.Contains(js(step(r["trace"], "approval")), `"approved_by":"owner"`) {
		t.Fatalf("retry after approval: %s", js(r))
	}
	ri, err := g.eng.GetRule(g.as("owner"), "lock-night", 0)
	if err != nil || ri.Approval == nil || ri.Approval.ID != idA || ri.Approval.DecidedBy != "owner" || ri.Approval.Channel != engine.ChannelWeb {
		t.Fatalf("rule info: %+v %v", ri.Approval, err)
	}
	// Single use: B, approved now, installs once; a later B needs another.
	if _, err := g.eng.DecideApproval(g.as("owner"), idB, true, engine.ChannelCLI); err != nil {
		t.Fatal(err)
	}
	// B would replace the installed A: it says so and installs nothing
	// until asked to replace, and then uses its approval.
	if r := deployOf(t, guest, lockProgB); r["outcome"].(map[string]any)["status"] != "rule_exists" {
		t.Fatalf("B over the installed A: %s", js(r))
	}
	replaceB := map[string]any{"program": prog(t, lockProgB), "input": map[string]any{"install": map[string]any{"replace": true}}}
	if r := execute(t, guest, replaceB); r["outcome"].(map[string]any)["ok"] != true || r["output"].(map[string]any)["replaced"] != true {
		t.Fatalf("B after approval: %s", js(r))
	}
	if _, err := g.eng.DecideApproval(g.as("owner"), idB, true, engine.ChannelCLI); !errors.Is(err, engine.ErrApprovalClosed) {
		t.Fatalf("deciding a used approval: %v", err)
	}
}

// TestRiskGateExpiryAndDecline: an expired approval installs nothing, nor
// can an expired request be approved; a declined one is refused.
func TestRiskGateExpiryAndDecline(t *testing.T) {
	g := newGateHouse(t)
	guest := g.client("guest-token")

	id := pending(t, deployOf(t, guest, lockProg))
	if _, err := g.eng.DecideApproval(g.as("owner"), id, true, engine.ChannelWeb); err != nil {
		t.Fatal(err)
	}
	g.skew.Store(int64(engine.DefaultApprovalTTL + time.Second))
	if next := pending(t, deployOf(t, guest, lockProg)); next == id || g.installed("lock-night") {
		t.Fatalf("an expired approval: new request %s (old %s), installed %v", next, id, g.installed("lock-night"))
	}
	late := pending(t, deployOf(t, guest, lockProgB))
	g.skew.Add(int64(engine.DefaultApprovalTTL + time.Second))
	if _, err := g.eng.DecideApproval(g.as("owner"), late, true, engine.ChannelWeb); !errors.Is(err, engine.ErrApprovalClosed) {
		t.Fatalf("approving an expired request: %v", err)
	}

	no := pending(t, deployOf(t, guest, lockProgB))
	if _, err := g.eng.DecideApproval(g.as("owner"), no, false, engine.ChannelWeb); err != nil {
		t.Fatal(err)
	}
	r := deployOf(t, guest, lockProgB)
	if oc := r["outcome"].(map[string]any); oc["status"] != "denied" || !strings.Contains(oc["error"].(string), "declined") || g.installed("lock-night") {
		t.Fatalf("after a decline: %s", js(r))
	}
	// The refusal is a run the trace door finds.
	tr := call(t, guest, "pilotage_trace", map[string]any{"run_id": r["run_id"]})
	if !strings.Contains(js(tr), "declined") {
		t.Errorf("trace of the declined deploy: %s", js(tr))
	}
}
