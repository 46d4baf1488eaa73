package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestApprovalInBrowser (issue 30): a guest's assistant deploys a door
// lock over MCP without elicitation and gets approval_pending with a
// page; the guest, logged in, sees the page without Approve (never its own
// request); the owner approves it there in Chromium; another program
// under the same name cannot ride that approval; the assistant's retry
// of the approved program installs it, recorded as approved on the web.
func TestApprovalInBrowser(t *testing.T) {
	ownerTok, guestTok := "owner-approval-token", "guest-approval-token"
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true},
		{Name: "guest", TokenHash: engine.HashToken(guestTok), Deploy: true, Approver: true},
	}
	cfg.StdioAs = "owner"
	a := startTestApp(t, cfg)
	base := a.URL()
	ctx := browser(t)

	c := mcpClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + guestTok}, "")
	testutil.Eventually(t, 10*time.Second, "demo catalog", func() bool {
		got, isErr := call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "front_lock.set"})
		return !isErr && got["entry"] != nil
	})
	deploy := func(state string) map[string]any {
		t.Helper()
		var prog map[string]any
		_ = json.Unmarshal([]byte(`{"name":"lock-night","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"lock","call":"front_lock.set","args":{"state":"`+state+`"}}]}`), &prog)
		out, isErr := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog})
		if isErr {
			t.Fatalf("deploy: %v", out)
		}
		return out
	}
	installed := func() bool { _, err := a.eng.GetRule(context.Background(), "lock-night", 0); return err == nil }

	r := deploy("LOCK")
	ap, _ := r["approval"].(map[string]any)
	if r["outcome"].(map[string]any)["status"] != "approval_pending" || ap == nil || installed() {
		t.Fatalf("the guest's lock deploy: %v (installed %v)", r, installed())
	}
	id := ap["id"].(string)
	u, err := url.Parse(ap["url"].(string))
	if err != nil || u.Path != "/approvals/"+id {
		t.Fatalf("approval url %v", ap["url"])
	}
	page := base + u.Path

	// The guest sees its own request, without Approve.
	do(t, ctx, "login page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, ctx, guestTok)
	do(t, ctx, "the guest's view", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#program")))
	if eval[bool](t, ctx, `!!document.getElementById('approve')`) {
		t.Fatal("the guest is offered Approve on its own request")
	}
	do(t, ctx, "logout", chromedp.Click(chromedp.CSS(`form.who button`)), chromedp.WaitVisible(chromedp.CSS("#token")))

	// The owner finds it in the list, reads it and approves.
	login(t, ctx, ownerTok)
	do(t, ctx, "approvals list", chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(chromedp.CSS(`#approvals a[href="/approvals/`+id+`"]`)),
		chromedp.Click(chromedp.CSS(`#approvals a[href="/approvals/`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#approve")))
	if txt := eval[string](t, ctx, `document.querySelector('main').innerText`); !strings.Contains(txt, "front_lock.set") || !strings.Contains(txt, "not verified facts") {
		t.Fatalf("the approval page does not show the program and the unverified labels: %s", txt)
	}
	do(t, ctx, "approve", chromedp.Click(chromedp.CSS("#approve")), chromedp.WaitVisible(chromedp.CSS("#decided")))
	if got := eval[string](t, ctx, `document.getElementById('decided').textContent`); !strings.Contains(got, "approved by owner (web)") || installed() {
		t.Fatalf("after Approve: %q (installed %v)", got, installed())
	}

	// Another program under the same name does not ride the approval.
	if b := deploy("UNLOCK"); b["outcome"].(map[string]any)["status"] != "approval_pending" || b["approval"].(map[string]any)["id"] == id || installed() {
		t.Fatalf("program B after A's approval: %v (installed %v)", b, installed())
	}
	// The assistant's retry of A installs it.
	r = deploy("LOCK")
	if r["outcome"].(map[string]any)["ok"] != true || !installed() {
		t.Fatalf("retry after approval: %v", r)
	}
	if ap := r["approval"].(map[string]any); ap["id"] != id || ap["decided_by"] != "owner" || ap["channel"] != engine.ChannelWeb {
		t.Fatalf("the installed deploy's approval: %v", ap)
	}
	do(t, ctx, "the used approval", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#decided")))
	if got := eval[string](t, ctx, `document.getElementById('approval-status').textContent`); got != "used" {
		t.Errorf("approval status after the retry: %q", got)
	}
}
