package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// stateKeyRE finds the idempotency key of hall_light.set's state form.
var stateKeyRE = regexp.MustCompile(`name="key" value="([^"]+-hall_light\.set-state)"`)

// TestResentControlFormSaysNotSentAgain: a control form posted again
// with the key of its first post (a back button, a double click) sends
// nothing and says so, with when it was sent; each render of the page
// gets a fresh key, so a form from a reloaded page sends.
func TestResentControlFormSaysNotSentAgain(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(ownerTok)
	render := func() url.Values {
		t.Helper()
		_, body, _ := c.get("/devices/hall_light")
		m, tok := stateKeyRE.FindStringSubmatch(body), csrfRE.FindStringSubmatch(body)
		if m == nil || tok == nil {
			t.Fatalf("no state form key or csrf token on the device page")
		}
		return url.Values{"csrf": {tok[1]}, "action": {"hall_light.set"}, "arg.state": {"ON"}, "key": {m[1]}}
	}
	manual := func() int {
		runs, err := f.store.ListRuns(context.Background(), storage.RunFilter{Kind: storage.KindManual})
		if err != nil {
			t.Fatal(err)
		}
		return len(runs)
	}
	send := func(form url.Values) string {
		t.Helper()
		code, _, h := c.post("/devices/hall_light/control", form)
		if code != http.StatusSeeOther {
			t.Fatalf("control: %d", code)
		}
		_, body, _ := c.get(h.Get("Location"))
		return body
	}
	first := render()
	body := send(first)
	mustContain(t, "first post", body, `hall_light.set {&#34;state&#34;:&#34;ON&#34;}: success.`)
	body = send(first)
	mustContain(t, "the same form again", body, `hall_light.set {&#34;state&#34;:&#34;ON&#34;}: already sent at `,
		`from this form (success), not sent again.`)
	mustNotContain(t, "the same form again", body, `: success.`)
	if n := manual(); n != 1 {
		t.Fatalf("the form posted twice ran %d times", n)
	}
	again := render()
	if again.Get("key") == first.Get("key") {
		t.Fatalf("a new render kept the key %s", first.Get("key"))
	}
	mustContain(t, "a reloaded form", send(again), `hall_light.set {&#34;state&#34;:&#34;ON&#34;}: success.`)
	if n := manual(); n != 2 {
		t.Fatalf("a reloaded form: %d runs, want 2", n)
	}
}
