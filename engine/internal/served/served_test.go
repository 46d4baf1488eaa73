package served

import (
	"context"
	"testing"
	"time"
)

// TestGuestsKeepToHalf: a guest's reads held open (a client that never
// reads its answers) take at most half of the gate, so the owner's trace
// reads still find room (attacker round 19: the owner's reads were
// refused 15 of 18 times while a guest held the whole budget).
func TestGuestsKeepToHalf(t *testing.T) {
	g := New(100)
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	var held []func()
	for range 2 {
		r, refused := g.Hold(short(), 25, true)
		if r == nil {
			t.Fatalf("a guest's read refused (%d) with room left", refused)
		}
		held = append(held, r)
	}
	if r, _ := g.Hold(short(), 25, true); r != nil {
		t.Fatal("the guests' reads passed half of the gate")
	}
	// One larger read of a guest is charged the guests' half: it waits
	// for the others rather than being refused for ever.
	if r, _ := g.Hold(short(), 500, true); r != nil {
		t.Fatal("a guest's large read passed while the guests' half is taken")
	}
	owner, refused := g.Hold(short(), 40, false)
	if owner == nil {
		t.Fatalf("the owner's read refused (%d) while guests hold their half", refused)
	}
	owner()
	for _, r := range held {
		r()
	}
	big, _ := g.Hold(short(), 500, true)
	if big == nil {
		t.Fatal("a guest's large read refused on an empty gate")
	}
	if got := g.Stats().InFlightBytes; got != 50 {
		t.Errorf("a guest's large read holds %d, want the guests' half (50)", got)
	}
	big()
	if got := g.Stats().InFlightBytes; got != 0 {
		t.Errorf("in flight %d after every release", got)
	}
}

// TestOneHoldTakesAtMostHalf: while guests hold their half, the owner's
// read of a run costing more than the other half is still served,
// charged that half (attacker round 20: one guest's slow reader kept the
// owner from its own 2.3 MB traces, 37 MB to serve, for 30 s); a second
// large one waits for it.
func TestOneHoldTakesAtMostHalf(t *testing.T) {
	g := New(100)
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	guest, _ := g.Hold(short(), 500, true)
	if guest == nil {
		t.Fatal("a guest's large read refused on an empty gate")
	}
	defer guest()
	owner, refused := g.Hold(short(), 370, false)
	if owner == nil {
		t.Fatalf("the owner's large read refused (%d) while only guests hold the gate", refused)
	}
	if got := g.Stats().InFlightBytes; got != 100 {
		t.Errorf("in flight %d, want the guests' half and the owner's half (100)", got)
	}
	if r, _ := g.Hold(short(), 370, false); r != nil {
		t.Error("a second large read passed a full gate")
	}
	owner()
}
