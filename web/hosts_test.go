package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// webRoute is one route of the UI as a browser would request it.
type webRoute struct {
	method, path string
	form         url.Values // POST body (the csrf member is filled in)
}

func webRoutes(runID string) []webRoute {
	return []webRoute{
		{"GET", "/", nil},
		{"GET", "/rules/hall-motion-light", nil},
		{"POST", "/rules/hall-motion-light/disable", url.Values{}},
		{"POST", "/rules/hall-motion-light/remove", url.Values{}},
		{"GET", "/runs", nil},
		{"GET", "/runs/" + runID, nil},
		{"GET", "/devices", nil},
		{"GET", "/events", nil},
		{"GET", "/login?next=/", nil},
		{"POST", "/login", url.Values{"token": {ownerTok}, "next": {"/"}}},
		{"POST", "/logout", url.Values{}},
		{"GET", "/static/app.css", nil},
	}
}

// TestDNSRebindingRefused: a page at http://evil.example:8080 whose name
// resolves to 127.0.0.1 reaches the UI with that Host (and, from scripts
// and forms, that Origin). Every route refuses it, login included, with or
// without logins configured, even carrying a valid session and CSRF token
// (what the rebound page would have read had the UI answered it once).
func TestDNSRebindingRefused(t *testing.T) {
	for _, mode := range []struct {
		name       string
		principals bool
	}{{"no principals (default)", false}, {"with logins", true}} {
		t.Run(mode.name, func(t *testing.T) {
			var f *fixture
			if mode.principals {
				f = newFixture(t, testPrincipals())
			} else {
				f = newFixture(t, nil)
			}
			runID := f.deploy(nil, motionRule).RunID
			// A legitimate session on a loopback name.
			good := f.client()
			if mode.principals {
				good.login(ownerTok)
			}
			tok := good.csrf("/rules/hall-motion-light")
			srvURL, _ := url.Parse(f.srv.URL)
			cookies := good.c.Jar.Cookies(srvURL)
			for _, rt := range webRoutes(runID) {
				req := newRouteRequest(t, f.srv.URL, rt, tok)
				req.Host = "evil.example:8080"
				req.Header.Set("Origin", "http://evil.example:8080")
				for _, ck := range cookies {
					req.AddCookie(ck)
				}
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s %s with Host evil.example:8080: status %d, want 403", rt.method, rt.path, resp.StatusCode)
				}
				if sc := resp.Header.Get("Set-Cookie"); sc != "" {
					t.Errorf("%s %s with a foreign Host set a cookie: %s", rt.method, rt.path, sc)
				}
			}
			// Nothing was changed through the refused requests.
			ri, err := f.e.GetRule(t.Context(), "hall-motion-light", 0)
			if err != nil || ri.Status != "enabled" {
				t.Fatalf("the rule after the refused requests: %+v %v", ri, err)
			}
		})
	}
}

func newRouteRequest(t *testing.T, base string, rt webRoute, csrf string) *http.Request {
	t.Helper()
	var req *http.Request
	var err error
	if rt.method == "POST" {
		form := url.Values{}
		for k, v := range rt.form {
			form[k] = v
		}
		if rt.path != "/login" {
			form.Set("csrf", csrf)
		}
		req, err = http.NewRequest("POST", base+rt.path, strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		req, err = http.NewRequest(rt.method, base+rt.path, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestLoopbackHostsServed: the loopback names, with their Origin, work for
// every page and for a form post.
func TestLoopbackHostsServed(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	addr := f.srv.Listener.Addr().String()
	port := addr[strings.LastIndex(addr, ":"):]
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "[::1]" + port, "localhost", "127.0.0.2" + port} {
		c := f.client()
		c.c.Transport = hostTransport{host}
		for _, path := range []string{"/", "/rules/hall-motion-light", "/runs", "/devices", "/static/app.css"} {
			if code, _, _ := c.get(path); code != 200 {
				t.Errorf("GET %s with Host %s: %d", path, host, code)
			}
		}
		tok := c.csrf("/rules/hall-motion-light")
		req := newRouteRequest(t, c.base, webRoute{"POST", "/rules/hall-motion-light/disable", url.Values{}}, tok)
		req.Header.Set("Origin", "http://"+host)
		if code, _, h := c.do(req); code != http.StatusSeeOther {
			t.Errorf("POST disable with Host %s: %d %v", host, code, h)
		}
		if _, err := f.e.SetRuleEnabled(t.Context(), "hall-motion-light", true); err != nil {
			t.Fatal(err)
		}
	}
}

// hostTransport sends every request with a fixed Host header.
type hostTransport struct{ host string }

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return http.DefaultTransport.RoundTrip(r)
}

// TestSafeNext: a post-login redirect stays on this site however a browser
// or a proxy reads it.
func TestSafeNext(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/", "/"},
		{"/devices", "/devices"},
		{"/runs?rule=hall-motion-light&outcome=failed", "/runs?rule=hall-motion-light&outcome=failed"},
		{"/rules/a.b_c-d#steps", "/rules/a.b_c-d#steps"},
		{"/runs/%72un", "/runs/%72un"},
		{"", "/"},
		{"devices", "/"},
		{"//evil.example/", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"\t//evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/\\evil.example", "/"},
		{"\\/evil.example", "/"},
		{"/a\\b", "/"},
		{"/%2F/evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%09/evil.example", "/"},
		{"%2F%2Fevil.example", "/"},
		{"/ /evil.example", "/"},
		{"/\u3000/evil.example", "/"},
		{"/\uff0fevil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/%zz", "/"},
	} {
		if got := safeNext(tc.next); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}

// TestLoginNextThroughHTTP: the example through the real login.
func TestLoginNextThroughHTTP(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	_, body, _ := c.get("/login?next=%2F%09%2Fevil")
	mustContain(t, "login page", body, `name="next" value="/"`)
	for _, next := range []string{"/\t/evil", "/\\evil", "/%2F/evil"} {
		code, _, h := c.post("/login", url.Values{"token": {ownerTok}, "next": {next}})
		if code != http.StatusSeeOther || h.Get("Location") != "/" {
			t.Errorf("login with next %q: %d Location %q, want /", next, code, h.Get("Location"))
		}
	}
}

// TestFormBodyBounded: a form post beyond limits.max_request_bytes is 413
// with a message naming the limit, before any parsing.
func TestFormBodyBounded(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	big := url.Values{"token": {strings.Repeat("x", 2<<20)}, "next": {"/"}}
	code, body, _ := c.post("/login", big)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limits.max_request_bytes") {
		t.Fatalf("2 MB login form: %d %q", code, body)
	}
	c.login(ownerTok) // the normal form still works
}

// TestTestRunInputBounded: the rule page's test form feeds execute's input
// like an MCP client does, and is bounded the same way: refused whole with
// a message naming limits.max_input_bytes, and no run stored.
func TestTestRunInputBounded(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	c := f.client()
	tok := c.csrf("/rules/hall-motion-light")
	big := strings.Repeat("v", 100<<10)
	code, _, h := c.post("/rules/hall-motion-light/test", url.Values{"csrf": {tok}, "trigger": {"motion"}, "value": {big}})
	if code != http.StatusSeeOther || h.Get("Location") != "/rules/hall-motion-light" {
		t.Fatalf("oversize test value: %d %v", code, h)
	}
	_, body, _ := c.get("/rules/hall-motion-light")
	mustContain(t, "rule page", body, "Refused: argument &#34;input&#34; is JSON of", "limits.max_input_bytes")
	runs, err := f.store.ListRuns(t.Context(), storage.RunFilter{Kind: storage.KindTest})
	if err != nil || len(runs) != 0 {
		t.Fatalf("a refused test run was stored: %d runs (%v)", len(runs), err)
	}
}
