package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// TestVersions: a rule's page lists its versions with who deployed each
// and when; the diff page compares any two; restore deploys the old one
// again, and a forged restore changes nothing.
func TestVersions(t *testing.T) {
	f := newFixture(t, testPrincipals())
	v1 := f.deploy(nil, motionRule)
	v2 := f.deploy(nil, strings.Replace(motionRule, "180", "200", 1))
	ref1, ref2 := refOf(t, v1), refOf(t, v2)
	c := f.client()
	c.login(ownerTok)
	page := "/rules/hall-motion-light"
	_, body, _ := c.get(page)
	mustContain(t, "rule page", body, `data-ref="`+ref1+`"`, `data-ref="`+ref2+`"`, "deployed by owner",
		`value="`+ref1+`"><button type="submit" class="restore">`, `id="compare-versions"`)
	mustNotContain(t, "rule page", body, `value="`+ref2+`"><button type="submit" class="restore">`)

	for _, tc := range []struct {
		name, query string
		code        int
		want        []string
	}{
		{"default: the one before against the installed", "", http.StatusOK, []string{`<span class="ddel">-         &#34;brightness&#34;: 180,`, `<span class="dadd">&#43;         &#34;brightness&#34;: 200,`}},
		{"reversed", "?from=" + ref2 + "&to=" + ref1, http.StatusOK, []string{`<span class="ddel">-         &#34;brightness&#34;: 200,`}},
		{"the same twice", "?from=" + ref1 + "&to=" + ref1, http.StatusOK, []string{`id="diff-same"`}},
		{"unknown version", "?from=automation.hall-motion-light@000000000000", http.StatusNotFound, []string{"has no version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := c.get(page + "/diff" + tc.query)
			if code != tc.code {
				t.Fatalf("status %d, want %d", code, tc.code)
			}
			mustContain(t, "diff", body, tc.want...)
		})
	}

	if code, _, _ := c.post(page+"/restore", url.Values{"csrf": {"forged"}, "ref": {ref1}}); code != http.StatusForbidden {
		t.Fatalf("a forged restore: %d", code)
	}
	if ref := installed(t, f, "hall-motion-light"); ref != ref2 {
		t.Fatalf("after a forged restore: %s", ref)
	}
	code, _, h := c.post(page+"/restore", url.Values{"csrf": {c.csrf(page)}, "ref": {ref1}})
	if code != http.StatusSeeOther || h.Get("Location") != page {
		t.Fatalf("restore: %d %v", code, h)
	}
	if ref := installed(t, f, "hall-motion-light"); ref != ref1 {
		t.Fatalf("after restore: %s, want %s", ref, ref1)
	}
	_, body, _ = c.get(page)
	mustContain(t, "after restore", body, "Restored: rule hall-motion-light runs "+ref1)

	gc := f.client()
	gc.login(guestTok)
	_, body, _ = gc.get(page)
	mustContain(t, "guest's rule page", body, `data-ref="`+ref2+`"`)
	mustNotContain(t, "guest's rule page", body, `class="restore"`)
}

// TestRestoreThroughGate: restoring a lock rule's old version as a login
// whose policy gates security deploys waits for approval: nothing is
// installed, and the restore goes to the approval request.
func TestRestoreThroughGate(t *testing.T) {
	kid := &engine.Principal{Name: "kid", TokenHash: engine.HashToken(kidTok), Deploy: true, Approval: &engine.ApprovalPolicy{}}
	f := newFixture(t, append(testPrincipals(), kid))
	ref1 := refOf(t, f.deploy(nil, lockRule))
	ref2 := refOf(t, f.deploy(nil, strings.Replace(lockRule, "23:00", "22:30", 1)))
	kc := f.client()
	kc.login(kidTok)
	page := "/rules/night-lock"
	code, _, h := kc.post(page+"/restore", url.Values{"csrf": {kc.csrf(page)}, "ref": {ref1}})
	if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/approvals/") {
		t.Fatalf("gated restore: %d %v", code, h)
	}
	if ref := installed(t, f, "night-lock"); ref != ref2 {
		t.Fatalf("the gated restore installed %s", ref)
	}
	_, body, _ := kc.get(h.Get("Location"))
	mustContain(t, "approval page", body, "needs approval", ref1)
}

func refOf(t *testing.T, r *engine.ExecuteResponse) string {
	t.Helper()
	out, ok := r.Output.(*pilotage.DeployOutput)
	if !ok {
		t.Fatalf("not a deploy's output: %+v", r)
	}
	return out.ProgramRef
}

func installed(t *testing.T, f *fixture, name string) string {
	t.Helper()
	ri, err := f.e.GetRule(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ri.ProgramRef
}
