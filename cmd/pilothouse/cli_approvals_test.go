package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotclient"
)

const guestToken = "guest-cli-test-token"

// cliAs runs one client command with token and returns stdout.
func cliAs(t *testing.T, url, token, cmd string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "--server", url, "--token", token)
	err := runCLI(context.Background(), cmd, args, &out, &errb, strings.NewReader(""))
	return out.String(), err
}

// TestCLIApprovals: a guest's lock deploy waits; `pilothouse approvals`
// lists it for the owner, the guest cannot approve its own request, the
// owner approves it with `pilothouse approve`, and the guest's retry
// installs it; a declined one stays out.
func TestCLIApprovals(t *testing.T) {
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken(cliToken), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken(guestToken), Deploy: true, Approver: true},
	}
	a := startTestApp(t, cfg)
	url := a.URL() + "/mcp"
	ctx := context.Background()
	guest, err := pilotclient.Dial(ctx, pilotclient.Options{URL: url, Token: guestToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guest.Close() })
	testutil.Eventually(t, 10*time.Second, "the demo lock", func() bool { _, err := guest.Get(ctx, "front_lock.set"); return err == nil })
	deploy := func(prog string) *pilotclient.ExecuteResult {
		r, err := guest.Execute(ctx, pilotclient.ExecuteRequest{Program: []byte(prog)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := deploy(lockRule)
	if r.Outcome.Status != pilotclient.StatusApprovalPending || r.Approval == nil {
		t.Fatalf("guest's lock deploy: %+v", r)
	}
	id := r.Approval.ID
	if out, err := cliAs(t, url, cliToken, "approvals"); err != nil || !strings.Contains(out, id) || !strings.Contains(out, "/approvals/"+id) {
		t.Fatalf("approvals: %v\n%s", err, out)
	}
	if _, err := cliAs(t, url, guestToken, "approve", id); err == nil || !strings.Contains(err.Error(), "may not decide") {
		t.Fatalf("guest approving its own request: %v", err)
	}
	if _, err := cliAs(t, url, "wrong-token-0123456789", "approve", id); err == nil || !strings.Contains(err.Error(), "bearer token") {
		t.Fatalf("a wrong token: %v", err)
	}
	if out, err := cliAs(t, url, cliToken, "approve", id); err != nil || !strings.Contains(out, "approved by owner") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	if r := deploy(lockRule); !r.Outcome.OK || r.Approval == nil || r.Approval.Channel != engine.ChannelCLI {
		t.Fatalf("retry after approval: %+v", r)
	}

	other := strings.Replace(lockRule, "lock-on-motion", "lock-again", 1)
	id2 := deploy(other).Approval.ID
	if out, err := cliAs(t, url, cliToken, "decline", id2); err != nil || !strings.Contains(out, "declined by owner") {
		t.Fatalf("decline: %v\n%s", err, out)
	}
	if r := deploy(other); r.Outcome.OK || r.Outcome.Status != "denied" {
		t.Fatalf("after a decline: %+v", r)
	}
	if out, err := cliAs(t, url, cliToken, "approvals"); err != nil || !strings.Contains(out, "no deploys are waiting") {
		t.Fatalf("approvals after deciding: %v\n%s", err, out)
	}
}

// TestWebApprovalThenRetry: over the real server, a guest's lock deploy
// (a client without elicitation) waits; the owner logs into the web UI,
// opens the approval's page and approves it (with the page's CSRF token);
// the guest's retry of the same request installs the rule.
func TestWebApprovalThenRetry(t *testing.T) {
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken(cliToken), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken(guestToken), Deploy: true},
	}
	a := startTestApp(t, cfg)
	ctx := context.Background()
	guest, err := pilotclient.Dial(ctx, pilotclient.Options{URL: a.URL() + "/mcp", Token: guestToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guest.Close() })
	testutil.Eventually(t, 10*time.Second, "the demo lock", func() bool { _, err := guest.Get(ctx, "front_lock.set"); return err == nil })
	req := pilotclient.ExecuteRequest{Program: []byte(lockRule)}
	r, err := guest.Execute(ctx, req)
	if err != nil || r.Outcome.Status != pilotclient.StatusApprovalPending || r.Approval == nil {
		t.Fatalf("guest's deploy: %v %+v", err, r)
	}
	u, err := url.Parse(r.Approval.URL)
	if err != nil || u.Path != "/approvals/"+r.Approval.ID {
		t.Fatalf("approval url %q: %v", r.Approval.URL, err)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	if resp, err := hc.PostForm(a.URL()+"/login", url.Values{"token": {cliToken}, "next": {u.Path}}); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %v %v", err, resp)
	}
	resp, err := hc.Get(a.URL() + u.Path)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`action="` + regexp.QuoteMeta(u.Path) + `/approve"><input type="hidden" name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil || !strings.Contains(string(page), "front_lock.set") {
		t.Fatalf("approval page has no approve form:\n%s", page)
	}
	if resp, err := hc.PostForm(a.URL()+u.Path+"/approve", url.Values{"csrf": {string(m[1])}}); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %v %v", err, resp)
	}
	if r, err := guest.Execute(ctx, req); err != nil || !r.Outcome.OK || r.Approval == nil || r.Approval.Channel != engine.ChannelWeb {
		t.Fatalf("retry after the web approval: %v %+v", err, r)
	}
}
