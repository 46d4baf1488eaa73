package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
)

// TestRecipesFromCookbook: every cookbook section with a program becomes
// a recipe whose program, params and scenario are JSON objects.
func TestRecipesFromCookbook(t *testing.T) {
	f := newFixture(t, nil)
	var b recipeBook
	got := b.all(f.e)
	if len(got) < 20 {
		t.Fatalf("%d recipes, want the cookbook's twenty-odd", len(got))
	}
	seen := map[string]bool{}
	for _, r := range got {
		for what, text := range map[string]string{"program": r.Program, "params": r.Params, "scenario": r.Scenario} {
			var obj map[string]any
			if err := json.Unmarshal([]byte(text), &obj); err != nil {
				t.Errorf("recipe %s: %s is not a JSON object: %v", r.Slug, what, err)
			}
		}
		if r.Slug == "" || seen[r.Slug] {
			t.Errorf("recipe %q: empty or repeated slug", r.Title)
		}
		seen[r.Slug] = true
	}
	mt, ok := b.get(f.e, "motion-light-with-timeout")
	if !ok || !strings.Contains(mt.Scenario, "hall_motion.illuminance") || mt.Params != "{}" {
		t.Fatalf("motion light recipe: %+v", mt)
	}
	if rp, _ := b.get(f.e, "reusable-motion-light-catalog-params"); !strings.Contains(rp.Params, `"light": "porch_light.set"`) || strings.Contains(rp.Params, "scenario") {
		t.Fatalf("reusable motion light's params: %s", rp.Params)
	}
}

// editorPost posts one editor op as the editor's script does.
func (c *client) editorOp(csrf, op, program, params, scenario string) (int, map[string]any) {
	c.t.Helper()
	form := url.Values{"csrf": {csrf}, "op": {op}, "program": {program}, "params": {params}, "scenario": {scenario}}
	req, _ := http.NewRequest(http.MethodPost, c.base+"/editor", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	code, body, _ := c.do(req)
	var out map[string]any
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			c.t.Fatalf("editor %s: not JSON: %v\n%s", op, err, body)
		}
	}
	return code, out
}

func diagPaths(out map[string]any) []string {
	var ps []string
	ds, _ := out["diagnostics"].([]any)
	for _, d := range ds {
		m := d.(map[string]any)
		ps = append(ps, m["severity"].(string)+" "+m["path"].(string))
	}
	return ps
}

// TestEditorValidate: the editor's validate is MCP's (the same
// diagnostics and paths), answered as JSON with the panel, and refused
// without the form's CSRF token.
func TestEditorValidate(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(ownerTok)
	tok := c.csrf("/editor")
	typo := strings.Replace(motionRule, "hall_light.set", "hall_lite.set", 1)
	for _, tc := range []struct {
		name, program string
		wantPath      string // a diagnostic's "severity path"
		wantPanel     []string
	}{
		{"valid", motionRule, "", []string{`id="ed-valid"`, `id="ed-plan"`, "hall_light.set", "risk-control"}},
		{"unknown entity", typo, "error /steps/0/call", []string{`data-path="/steps/0/call"`, "hall_lite.set"}},
		{"not JSON", `{"name": "x",`, "error ", []string{`id="ed-diags"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := c.editorOp(tok, "validate", tc.program, "{}", "{}")
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			mcp, err := f.e.Validate(engine.WithPrincipal(context.Background(), testPrincipals()[0]), json.RawMessage(tc.program), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := diagPaths(out); len(got) != len(mcp.Diagnostics) {
				t.Fatalf("diagnostics %v, MCP's validate gives %+v", got, mcp.Diagnostics)
			}
			if tc.wantPath != "" && !strings.HasPrefix(strings.Join(diagPaths(out), ","), tc.wantPath) {
				t.Fatalf("diagnostics %v, want %q first", diagPaths(out), tc.wantPath)
			}
			if tc.wantPath == "" && len(diagPaths(out)) != 0 {
				t.Fatalf("diagnostics %v, want none", diagPaths(out))
			}
			mustContain(t, "panel", out["panel"].(string), tc.wantPanel...)
		})
	}
	if code, _ := c.editorOp("forged", "validate", motionRule, "{}", "{}"); code != http.StatusForbidden {
		t.Fatalf("a forged validate: %d", code)
	}
}

// TestEditorHintsForAPerson: the editor says a diagnostic's hint as the
// web's pages do (the Devices page, a rule's Edit), never with the tool
// names or input members an assistant is told.
func TestEditorHintsForAPerson(t *testing.T) {
	f := newFixture(t, testPrincipals())
	f.deploy(testPrincipals()[0], motionRule)
	c := f.client()
	c.login(ownerTok)
	tok := c.csrf("/editor")
	for _, tc := range []struct{ name, program, want string }{
		{"unknown entry", strings.Replace(motionRule, "hall_light.set", "zzqx_qqq.set", 1), "Devices page"},
		{"bad arguments", strings.Replace(motionRule, `"brightness": 180`, `"glow": 1`, 1), "a device's page shows them"},
		{"selector matching nothing", strings.Replace(motionRule, `"call": "hall_light.set"`, `"call": {"area": "attic", "type": "light", "action": "set"}`, 1), "Devices page shows by area and type"},
		{"a rule of the name installed", strings.Replace(motionRule, `"brightness": 180`, `"brightness": 90`, 1), "use Edit on its page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out := c.editorOp(tok, "validate", tc.program, "{}", "{}")
			got, _ := json.Marshal(out["diagnostics"])
			if !strings.Contains(string(got), tc.want) || strings.Contains(string(got), "pilotage_") || strings.Contains(string(got), "install.replace") {
				t.Fatalf("diagnostics %s, want %q and no assistant's words", got, tc.want)
			}
		})
	}
}

// TestEditorTestRun: a test run runs the program as written with the
// params and the scenario, answers with its steps and a link to the stored
// trace, and sends nothing.
func TestEditorTestRun(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(ownerTok)
	tok := c.csrf("/editor")
	_, out := c.editorOp(tok, "test", motionRule, "{}", `{"trigger": "motion"}`)
	panel := out["panel"].(string)
	mustContain(t, "test panel", panel, `id="ed-test"`, "success", "hall_light.set", `href="/runs/`,
		`<div class="sub decision">test run: scenario</div>`) // why the trigger fired, beside it
	if s := out["summary"].(string); !strings.Contains(s, "Test run finished: success") {
		t.Fatalf("summary %q", s)
	}
	runs, err := f.e.ListRuns(engine.WithPrincipal(context.Background(), testPrincipals()[0]), engine.RunFilter{Kind: engine.KindTest})
	if err != nil || len(runs) != 1 {
		t.Fatalf("test runs: %v %v", runs, err)
	}
	for _, tc := range []struct{ name, params, scenario, want string }{
		{"params not an object", `[1]`, `{}`, "The params are not a JSON object"},
		{"scenario not JSON", `{}`, `{"trigger":`, "The scenario is not a JSON object"},
		{"scenario inside params", `{"scenario": {}}`, `{}`, `may not have a member &#34;scenario&#34;`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out := c.editorOp(tok, "test", motionRule, tc.params, tc.scenario)
			mustContain(t, "panel", out["panel"].(string), tc.want)
		})
	}
	_, out = c.editorOp(tok, "test", strings.Replace(motionRule, "hall_light.set", "hall_lite.set", 1), "{}", "{}")
	mustContain(t, "invalid program's test", out["panel"].(string), "fix them first, nothing ran")
}

// TestEditorDeployForm: without JavaScript the editor is a form: deploy
// installs the rule and goes to its page; a lock rule under a policy that
// gates security waits for approval (nothing installed, a link to the
// request); a guest may not deploy at all.
func TestEditorDeployForm(t *testing.T) {
	kid := &engine.Principal{Name: "kid", TokenHash: engine.HashToken(kidTok), Deploy: true, Approval: &engine.ApprovalPolicy{}}
	f := newFixture(t, append(testPrincipals(), kid))
	c := f.client()
	c.login(ownerTok)
	form := url.Values{"csrf": {c.csrf("/editor")}, "op": {"deploy"}, "program": {motionRule}, "params": {"{}"}}
	code, _, h := c.post("/editor", form)
	if code != http.StatusSeeOther || h.Get("Location") != "/rules/hall-motion-light" {
		t.Fatalf("deploy: %d %v", code, h)
	}
	if ri, err := f.e.GetRule(context.Background(), "hall-motion-light", 0); err != nil || ri.Status != "enabled" {
		t.Fatalf("installed: %+v %v", ri, err)
	}
	_, body, _ := c.get("/rules/hall-motion-light")
	mustContain(t, "rule page", body, "Deployed: rule hall-motion-light is installed")

	// Another program of the same name from "New rule" is not installed
	// over it: the person is sent to the rule's Edit, not told about
	// input.install.replace (the assistant's way).
	other := url.Values{"csrf": {c.csrf("/editor")}, "op": {"deploy"}, "program": {strings.Replace(motionRule, `"brightness": 180`, `"brightness": 90`, 1)}, "params": {"{}"}}
	_, body, _ = c.post("/editor", other)
	mustContain(t, "a second program of the name", body, "use Edit on its page", `<a href="/rules/hall-motion-light">Open hall-motion-light</a>`)
	mustNotContain(t, "a second program of the name", body, "install.replace")

	// The no-JS validate renders the page again with the diagnostics.
	form.Set("op", "validate")
	form.Set("program", strings.Replace(motionRule, "hall_light.set", "hall_lite.set", 1))
	code, body, _ = c.post("/editor", form)
	mustContain(t, "validate page", body, `data-path="/steps/0/call"`, html.EscapeString(`"hall_lite.set"`))
	if code != http.StatusOK {
		t.Fatalf("validate page: %d", code)
	}
	form.Set("op", "test")
	form.Set("program", motionRule)
	form.Set("scenario", `{"trigger": "motion"}`)
	_, body, _ = c.post("/editor", form)
	mustContain(t, "test run page", body, `id="ed-test"`, "hall_light.set", `href="/runs/`)

	kc := f.client()
	kc.login(kidTok)
	form = url.Values{"csrf": {kc.csrf("/editor")}, "op": {"deploy"}, "program": {lockRule}, "params": {"{}"}}
	code, body, _ = kc.post("/editor", form)
	mustContain(t, "gated deploy", body, `id="ed-approval"`, `href="/approvals/`)
	if _, err := f.e.GetRule(context.Background(), "night-lock", 0); code != http.StatusOK || err == nil {
		t.Fatalf("gated deploy: %d, installed anyway (err %v)", code, err)
	}
	ap, _ := f.e.ListApprovals(engine.WithPrincipal(context.Background(), kid), true)
	if len(ap) != 1 || ap[0].Status != "pending" || !strings.Contains(body, "/approvals/"+ap[0].ID) {
		t.Fatalf("approvals: %+v", ap)
	}

	gc := f.client()
	gc.login(guestTok)
	_, body, _ = gc.get("/editor")
	mustNotContain(t, "guest's editor", body, `id="deploy"`)
	form = url.Values{"csrf": {gc.csrf("/editor")}, "op": {"deploy"}, "program": {strings.Replace(motionRule, "hall-motion-light", "guest-light", 1)}, "params": {"{}"}}
	_, body, _ = gc.post("/editor", form)
	if _, err := f.e.GetRule(context.Background(), "guest-light", 0); err == nil {
		t.Fatalf("the guest's deploy installed a rule: %s", body)
	}
	mustContain(t, "guest's deploy", body, `id="ed-error"`)
}

// TestEditorPages: the recipe picker prefills the editor, editing a rule
// loads its program and params, and only the editor page loads the
// editor's bundle, which is served gzipped from the binary.
func TestEditorPages(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	c := f.client()
	code, body, h := c.get("/editor?recipe=button-scenes-with-choose")
	if code != http.StatusOK {
		t.Fatalf("recipe page: %d", code)
	}
	// CodeMirror's one <style> element is allowed by this response's nonce.
	nonce := regexp.MustCompile(`data-nonce="([^"]+)"`).FindStringSubmatch(body)
	if csp := h.Get("Content-Security-Policy"); nonce == nil || !strings.Contains(csp, "style-src 'self' 'nonce-"+nonce[1]+"'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("editor CSP %q for nonce %v", csp, nonce)
	}
	if _, _, h := c.get("/"); strings.Contains(h.Get("Content-Security-Policy"), "nonce") {
		t.Fatalf("the rules page allows inline styles: %q", h.Get("Content-Security-Policy"))
	}
	mustContain(t, "recipe page", body, `<script src="/static/editor.js" defer>`, "bedroom_remote.action", `value="button-scenes-with-choose" selected`,
		html.EscapeString(`"value": "brightness_up"`))
	if code, _, _ := c.get("/editor?recipe=no-such"); code != http.StatusNotFound {
		t.Fatalf("an unknown recipe: %d", code)
	}
	_, body, _ = c.get("/rules/hall-motion-light/edit")
	mustContain(t, "edit page", body, `name="rule" value="hall-motion-light"`, html.EscapeString(`"brightness": 180`))
	for _, p := range []string{"/", "/rules/hall-motion-light", "/runs", "/devices"} {
		_, body, _ := c.get(p)
		mustNotContain(t, p, body, "editor.js")
	}
	_, body, _ = c.get("/")
	mustContain(t, "rules page", body, `href="/editor"`)
	_, body, _ = c.get("/rules/hall-motion-light")
	mustContain(t, "rule page", body, `href="/rules/hall-motion-light/edit"`)

	want, _ := staticFS.ReadFile("static/editor.js")
	req, _ := http.NewRequest(http.MethodGet, c.base+"/static/editor.js", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength <= 0 || resp.ContentLength > int64(len(want))/2 {
		t.Fatalf("bundle: encoding %q, %d bytes of %d", resp.Header.Get("Content-Encoding"), resp.ContentLength, len(want))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, want) || len(want) < 1000 {
		t.Fatalf("bundle: %d bytes unpacked (%v), want the embedded %d", len(got), err, len(want))
	}
}
