package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
)

// TestEditorRefusesLookAlikeName: a deploy from the editor whose rule
// name a person cannot tell apart from another's rule ("Hall-Motion-Light"
// beside the owner's "hall-motion-light") installs nothing, and the
// error panel names the rule already installed.
func TestEditorRefusesLookAlikeName(t *testing.T) {
	kid := &engine.Principal{Name: "kid", TokenHash: engine.HashToken(kidTok), Deploy: true, Approval: &engine.ApprovalPolicy{Require: []string{}}}
	f := newFixture(t, append(testPrincipals(), kid))
	c := f.client()
	c.login(ownerTok)
	form := url.Values{"csrf": {c.csrf("/editor")}, "op": {"deploy"}, "program": {motionRule}, "params": {"{}"}}
	if code, _, h := c.post("/editor", form); code != http.StatusSeeOther {
		t.Fatalf("owner deploy: %d %v", code, h)
	}
	kc := f.client()
	kc.login(kidTok)
	form = url.Values{"csrf": {kc.csrf("/editor")}, "op": {"deploy"}, "program": {strings.Replace(motionRule, "hall-motion-light", "Hall-Motion-Light", 1)}, "params": {"{}"}}
	code, body, _ := kc.post("/editor", form)
	if _, err := f.e.GetRule(context.Background(), "Hall-Motion-Light", 0); code != http.StatusOK || err == nil {
		t.Fatalf("look-alike deploy: %d, installed anyway (err %v)", code, err)
	}
	mustContain(t, "look-alike deploy", body, `id="ed-error"`, "looks the same", html.EscapeString(`"hall-motion-light"`))
}
