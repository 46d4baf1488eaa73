package web

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
)

const kidTok = "kid-secret"

// TestApprovalPages: a requester's lock deploy waits; its page shows the
// program, the plan, the labels as unverified claims and the diff against
// the installed rule; the requester cannot approve it (not an approver),
// a forged form is refused, the owner approves it, and the requester's
// retry installs it.
func TestApprovalPages(t *testing.T) {
	kid := &engine.Principal{Name: "kid", TokenHash: engine.HashToken(kidTok), Deploy: true, Approval: &engine.ApprovalPolicy{}}
	f := newFixture(t, append(testPrincipals(), kid))
	kctx := engine.WithPrincipal(context.Background(), kid)
	deploy := func(prog string) *engine.ExecuteResponse {
		r, err := f.e.Execute(kctx, engine.ExecuteRequest{Program: json.RawMessage(prog), Input: json.RawMessage(`{"install":{"replace":true}}`)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// An installed night lock, then a changed version that waits.
	first := strings.Replace(lockRule, "LOCK", "UNLOCK", 1)
	f.deploy(testPrincipals()[0], first)
	r := deploy(lockRule)
	if r.Outcome.Status != "approval_pending" || r.Approval == nil {
		t.Fatalf("kid's deploy: %+v", r)
	}
	id := r.Approval.ID
	page := "/approvals/" + id

	kc := f.client()
	kc.login(kidTok)
	code, body, _ := kc.get(page)
	if code != http.StatusOK || strings.Contains(body, `id="approve"`) {
		t.Fatalf("the requester's view: %d, offers approve: %v", code, strings.Contains(body, `id="approve"`))
	}
	oc := f.client()
	oc.login(ownerTok)
	code, body, _ = oc.get(page)
	mustContain(t, "approval page", body, `id="approve"`, `id="decline"`, "unverified", "not verified facts", "front_lock.set",
		"- ", "+ ", `id="diff"`, "UNLOCK", "Plan with the bound arguments",
		"none of its runs is in progress now")
	if code != http.StatusOK {
		t.Fatalf("owner's view: %d", code)
	}
	_, list, _ := oc.get("/approvals")
	mustContain(t, "approvals list", list, id, "kid")

	if code, _, _ := kc.post(page+"/approve", url.Values{"csrf": {kc.csrf(page)}}); code != http.StatusForbidden {
		t.Fatalf("the requester approving: %d", code)
	}
	if code, _, _ := oc.post(page+"/approve", url.Values{"csrf": {"forged"}}); code != http.StatusForbidden {
		t.Fatalf("a forged approve: %d", code)
	}
	if code, _, h := oc.post(page+"/approve", url.Values{"csrf": {oc.csrf(page)}}); code != http.StatusSeeOther || h.Get("Location") != page {
		t.Fatalf("approve: %d %v", code, h)
	}
	_, body, _ = oc.get(page)
	mustContain(t, "the approver's flash", body, "Approved. kid&#39;s next try of this deploy installs it")
	// The requester installs it from the page: the form sends the same
	// program and input, replacing the installed rule as it asked.
	_, body, _ = kc.get(page)
	mustContain(t, "the requester's approved page", body, `id="install-now"`, `name="rule" value="night-lock"`)
	mustNotContain(t, "the owner's approved page", func() string { _, b, _ := oc.get(page); return b }(), `id="install-now"`)
	form := url.Values{"csrf": {kc.csrf(page)}}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="(op|program|params|rule)" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if code, _, h := kc.post("/editor", form); code != http.StatusSeeOther || h.Get("Location") != "/rules/night-lock" {
		t.Fatalf("install now: %d %v", code, h)
	}
	_, body, _ = oc.get(page)
	mustContain(t, "decided page", body, "used", "approved by owner (web)")
	mustNotContain(t, "used page", body, `id="install-now"`)
}
