package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestHelpersPage: the owner creates a helper with the page's plain form
// (CSRF-checked, no JavaScript), lands on its device page with its value
// and actions, and sets it there; a guest sees only the helpers of its
// area, no form, and is refused a create.
func TestHelpersPage(t *testing.T) {
	ownerP := &engine.Principal{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true, Admin: true}
	guestP := &engine.Principal{Name: "guest", TokenHash: engine.HashToken(guestTok), Scope: engine.Scope{Areas: []string{"living"}}}
	f := newFixture(t, []*engine.Principal{ownerP, guestP})
	owner := f.client()
	owner.login(ownerTok)
	tok := owner.csrf("/helpers")

	form := url.Values{"csrf": {tok}, "id": {"target"}, "kind": {"number"}, "name": {"Target temperature"}, "area": {"living"},
		"min": {"5"}, "max": {"30"}, "step": {"0.5"}, "unit": {"°C"}, "initial": {"20"}}
	if code, _, _ := owner.post("/helpers", url.Values{"id": {"x"}, "kind": {"flag"}}); code != http.StatusForbidden {
		t.Fatalf("create without the CSRF token: %d", code)
	}
	code, _, h := owner.post("/helpers", form)
	if code != http.StatusSeeOther || h.Get("Location") != "/devices/target" {
		t.Fatalf("create: %d %v", code, h)
	}
	_, page, _ := owner.get("/devices/target")
	mustContain(t, "helper page", page, "Helper target created", "target.state", "20", "target.set", "target.increment", "target.decrement")
	bad := url.Values{"csrf": {tok}, "id": {"vacation_mode"}, "kind": {"flag"}, "area": {"hall"}, "min": {"x"}}
	// A refused form comes back as typed, to fix rather than retype.
	code, list, _ := owner.post("/helpers", bad)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("a bad form: %d", code)
	}
	mustContain(t, "helpers page after a bad form", list, "Refused: min is not a number: x", `id="helper-target"`,
		`name="id" value="vacation_mode"`, `name="area" value="hall"`, `name="min" value="x"`, `<option selected>flag</option>`)
	_, list, _ = owner.post("/helpers", url.Values{"csrf": {tok}, "id": {"target"}, "kind": {"flag"}})
	mustContain(t, "helpers page after a second create", list, "Refused: helper target exists")
	_, list, _ = owner.get("/helpers")
	mustNotContain(t, "helpers page read again", list, "Refused:", `value="vacation_mode"`)
	form = url.Values{"csrf": {tok}, "id": {"vacation_mode"}, "kind": {"flag"}, "area": {"hall"}}
	if code, _, _ := owner.post("/helpers", form); code != http.StatusSeeOther {
		t.Fatalf("create vacation_mode: %d", code)
	}
	if code, _, _ := owner.post("/devices/target/control", url.Values{"csrf": {tok}, "action": {"target.set"}, "arg.value": {"21.5"}, "key": {"k1"}}); code != http.StatusSeeOther {
		t.Fatalf("set target: %d", code)
	}
	testutil.Eventually(t, 10*time.Second, "target at 21.5", func() bool {
		l, _ := f.e.Live(context.Background(), "target.state")
		return l.Value == 21.5
	})
	// The set slider starts at the value, not at min: Send unchanged keeps it.
	_, page, _ = owner.get("/devices/target")
	mustContain(t, "helper page after set", page, `name="arg.value" min="5" max="30" step="0.5" value="21.5"`)

	if code, _, _ := owner.post("/devices/vacation_mode/control", url.Values{"csrf": {tok}, "action": {"vacation_mode.turn_on"}, "key": {"k2"}}); code != http.StatusSeeOther {
		t.Fatalf("turn vacation_mode on: %d", code)
	}
	f.e.FlushLogbook()
	_, book, _ := owner.get("/logbook")
	mustContain(t, "owner's logbook", book, "vacation_mode: false → true (vacation_mode.turn_on)", "target: 20 → 21.5")

	guest := f.client()
	guest.login(guestTok)
	_, glist, _ := guest.get("/helpers")
	mustContain(t, "guest's helpers page", glist, `id="helper-target"`)
	mustNotContain(t, "guest's helpers page", glist, "vacation_mode", `action="/helpers"`)
	_, gbook, _ := guest.get("/logbook")
	mustContain(t, "guest's logbook", gbook, "target: 20 → 21.5")
	mustNotContain(t, "guest's logbook", gbook, "vacation_mode")
	gtok := guest.csrf("/helpers")
	_, glist, _ = guest.post("/helpers", url.Values{"csrf": {gtok}, "id": {"mine"}, "kind": {"flag"}, "area": {"living"}})
	mustContain(t, "guest's refused create", glist, "Refused: principal")
	if len(f.e.Helpers(context.Background())) != 2 {
		t.Errorf("helpers: %+v", f.e.Helpers(context.Background()))
	}
	if code, _, _ := guest.get("/devices/vacation_mode"); code != http.StatusNotFound {
		t.Errorf("guest's vacation_mode page: %d", code)
	}
}

// TestHelperPageOpensWithItsValue: a helper's page shows its value first,
// above its controls and history (a device's page keeps its values last).
func TestHelperPageOpensWithItsValue(t *testing.T) {
	ownerP := &engine.Principal{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true, Admin: true}
	f := newFixture(t, []*engine.Principal{ownerP})
	owner := f.client()
	owner.login(ownerTok)
	tok := owner.csrf("/helpers")
	if code, _, _ := owner.post("/helpers", url.Values{"csrf": {tok}, "id": {"guests"}, "kind": {"counter"}, "initial": {"3"}}); code != http.StatusSeeOther {
		t.Fatalf("create: %d", code)
	}
	for _, tt := range []struct {
		path  string
		first bool
	}{{"/devices/guests", true}, {"/devices/hall_light", false}} {
		_, page, _ := owner.get(tt.path)
		now, ctl, hist := strings.Index(page, `id="now-h"`), strings.Index(page, `id="ctl-h"`), strings.Index(page, `id="hist-h"`)
		if now < 0 || ctl < 0 || hist < 0 {
			t.Fatalf("%s: a section is missing (now %d, control %d, history %d)", tt.path, now, ctl, hist)
		}
		if first := now < ctl && now < hist; first != tt.first {
			t.Errorf("%s: values first = %v, want %v", tt.path, first, tt.first)
		}
	}
}

// TestRecipeMakesItsHelpers: a helpers-guide recipe in the editor lists the
// helpers it uses; the owner makes a missing one with the form the page
// gives (the guide's definition, exactly), and lands back on the recipe,
// which now says it is in the house. A guest is told to ask the owner.
func TestRecipeMakesItsHelpers(t *testing.T) {
	ownerP := &engine.Principal{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true, Admin: true}
	guestP := &engine.Principal{Name: "guest", TokenHash: engine.HashToken(guestTok), Scope: engine.Scope{Areas: []string{"living"}}}
	f := newFixture(t, []*engine.Principal{ownerP, guestP})
	owner := f.client()
	owner.login(ownerTok)
	const page = "/editor?recipe=wake-up-time-from-a-helper"
	_, body, _ := owner.get(page)
	mustContain(t, "recipe page", body, `id="ed-needs"`, "Make wake_up", `name="mode" value="time"`, `name="initial" value="06:45"`)
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`).FindAllStringSubmatch(body[strings.Index(body, `id="ed-needs"`):], -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	code, _, h := owner.post("/helpers", form)
	if code != http.StatusSeeOther || h.Get("Location") != page {
		t.Fatalf("make wake_up: %d %v (form %v)", code, h, form)
	}
	var made *engine.HelperDef
	for _, hv := range f.e.Helpers(context.Background()) {
		if hv.Def.ID == "wake_up" {
			made = &hv.Def
		}
	}
	if made == nil || made.Kind != "datetime" || made.Mode != "time" || made.Initial != "06:45:00" {
		t.Fatalf("wake_up as made: %+v", made)
	}
	_, body, _ = owner.get(page)
	mustContain(t, "recipe page after", body, "wake_up</span> (datetime): in your house.")
	mustNotContain(t, "recipe page after", body, "Make wake_up")

	// A helper of the recipe's id but another kind is said as such.
	if _, err := f.e.PutHelper(engine.WithPrincipal(context.Background(), ownerP), engine.HelperDef{ID: "house_empty", Kind: "number", Min: ptr(0.0), Max: ptr(1.0)}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = owner.get("/editor?recipe=presence-heating-with-a-house-empty-flag")
	mustContain(t, "recipe with a clashing helper", body, "house_empty</span> (flag): your house has a number of that id")
	// An unknown recipe's name is echoed only when it is a slug.
	code, body, _ = owner.get("/editor?recipe=abc%E2%80%AEfdp.exe")
	if code != http.StatusNotFound || strings.Contains(body, "\u202e") || !strings.Contains(body, "no recipe by that name") {
		t.Fatalf("an unknown recipe with a direction mark: %d", code)
	}
	if _, body, _ = owner.get("/editor?recipe=no-such-recipe"); !strings.Contains(body, "no recipe called no-such-recipe") {
		t.Fatal("an unknown recipe's slug is not echoed")
	}

	guest := f.client()
	guest.login(guestTok)
	_, body, _ = guest.get("/editor?recipe=notify-once-per-day")
	mustContain(t, "guest's recipe page", body, "notified_today</span> (flag): missing; the owner makes it")
	mustNotContain(t, "guest's recipe page", body, "Make notified_today")
}

func ptr(v float64) *float64 { return &v }
