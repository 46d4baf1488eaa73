package main

import "testing"

func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{2 * mb, 128 * mb, 6400}, // small house: the goal is live + 128 MB
		{0, 128 * mb, 12800},     // below 1 MB counts as 1 MB
		{32 * mb, 128 * mb, 400}, // 4 × live already gives the headroom
		{95 * mb, 128 * mb, 400}, // big house: plain GOGC=400
		{3 * mb, 128 * mb, 4200}, // 4266 rounded down to a step of 100
		{10 * mb, 16 * mb, 400},  // never below gcPercent
		{1 * mb, 0, gcPercent},   // headroom off
	} {
		if got := gcPercentFor(c.live, c.headroom); got != c.want {
			t.Errorf("gcPercentFor(%d MB, %d MB) = %d, want %d", c.live/mb, c.headroom/mb, got, c.want)
		}
	}
}

func TestCeilingFor(t *testing.T) {
	const mb = 1 << 20
	if got := ceilingFor(48 * mb); got != gcCeiling {
		t.Errorf("ceilingFor(48 MB) = %d MB, want %d MB", got/mb, gcCeiling/mb)
	}
	if got := ceilingFor(300 * mb); got != 600*mb {
		t.Errorf("ceilingFor(300 MB) = %d MB, want 600 MB", got/mb)
	}
}
