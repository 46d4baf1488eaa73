package engine

import (
	"context"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// TestLiveFollowsScope: live values and live changes reach a principal
// only for the entries of its catalog; a catalog change is reported only
// when it touches them.
func TestLiveFollowsScope(t *testing.T) {
	guest := &Principal{Name: "guest", TokenHash: HashToken("g"), Scope: Scope{DenyTypes: []string{"lock"}}}
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true}
	h := newHouse(t, Config{Principals: []*Principal{owner, guest}})
	gctx, octx := WithPrincipal(context.Background(), guest), WithPrincipal(context.Background(), owner)

	if _, ok := h.eng.Live(octx, "front_lock.state"); !ok {
		t.Error("the owner has no live value of the lock")
	}
	if l, ok := h.eng.Live(gctx, "front_lock.state"); ok {
		t.Errorf("the guest read the lock it may not see: %+v", l)
	}
	if _, ok := h.eng.Live(gctx, "hall_motion.illuminance"); !ok {
		t.Error("the guest has no live value of the hall sensor")
	}

	w, ok := h.eng.WatchLive(gctx, 16)
	if !ok {
		t.Fatal("no live watch with a device catalog")
	}
	defer w.Close()
	h.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/front_lock", Payload: []byte(`{"state":"UNLOCK"}`)})
	h.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"illuminance":91}`)})
	var passed []string
	deadline := time.After(5 * time.Second)
	for len(passed) == 0 || passed[len(passed)-1] != "hall_motion.illuminance" {
		select {
		case c := <-w.C:
			if w.Pass(c) {
				passed = append(passed, c.ID)
			}
		case <-deadline:
			t.Fatalf("the hall sensor's change never passed; passed %v", passed)
		}
	}
	for _, id := range passed {
		if id == "front_lock.state" {
			t.Errorf("the guest's watch passed the lock's change: %v", passed)
		}
	}

	if w.CatalogTouched() {
		t.Error("touched with no catalog change")
	}
	w.Pass(LiveChange{Kind: LiveCatalog, ID: "front_lock.state"})
	if w.CatalogTouched() {
		t.Error("a change of an entry out of scope touched the guest's catalog")
	}
	w.Pass(LiveChange{Kind: LiveCatalog, ID: "hall_motion.illuminance"})
	if !w.CatalogTouched() {
		t.Error("a change of an entry in scope did not touch the guest's catalog")
	}
	if w.CatalogTouched() {
		t.Error("one change reported twice")
	}
}
