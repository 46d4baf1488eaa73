package main

import "testing"

func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{2 * mb, 16 * mb, 800},  // small house: the goal is live + 16 MB
		{0, 16 * mb, 1600},      // below 1 MB counts as 1 MB
		{16 * mb, 16 * mb, 100}, // 2 × live already gives the headroom
		{95 * mb, 16 * mb, 100}, // big house: plain GOGC=100
		{3 * mb, 16 * mb, 500},  // 533 rounded down to a step of 50
		{10 * mb, 4 * mb, 100},  // never below gcPercent
		{1 * mb, 0, gcPercent},  // headroom off
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
