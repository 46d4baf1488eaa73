package devices

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestSnapshotEdits: random puts and deletes against a map; every
// snapshot along the way keeps what it held (later edits copy, never
// write into it), its entries sorted and its chunks within bounds.
func TestSnapshotEdits(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type kept struct {
		s    *Snapshot
		want map[string]string
	}
	var history []kept
	ref := map[string]string{}
	s := emptySnapshot()
	for round := 0; round < 300; round++ {
		ed := s.edit()
		for k := 0; k < 1+rng.Intn(40); k++ {
			id := fmt.Sprintf("dev%03d.e%02d", rng.Intn(200), rng.Intn(12))
			if rng.Intn(3) == 0 {
				ed.del(id)
				delete(ref, id)
				continue
			}
			rev := fmt.Sprint(round, k)
			ed.put(&pilotage.Entry{ID: id, Revision: rev})
			ref[id] = rev
		}
		s = ed.done(uint64(round))
		want := make(map[string]string, len(ref))
		for k, v := range ref {
			want[k] = v
		}
		history = append(history, kept{s, want})
	}
	for i, h := range history {
		checkSnapshotContent(t, i, h.s, h.want)
	}
}

func checkSnapshotContent(t *testing.T, round int, s *Snapshot, want map[string]string) {
	t.Helper()
	if s.Len() != len(want) {
		t.Fatalf("round %d: len %d, want %d", round, s.Len(), len(want))
	}
	ids := make([]string, 0, len(want))
	for id, rev := range want {
		ids = append(ids, id)
		if got := s.Hash(id); got != rev {
			t.Fatalf("round %d: %s = %q, want %q", round, id, got, rev)
		}
	}
	sort.Strings(ids)
	ents := s.Entries()
	if len(ents) != len(ids) {
		t.Fatalf("round %d: %d entries listed, want %d", round, len(ents), len(ids))
	}
	for i, e := range ents {
		if e.ID != ids[i] {
			t.Fatalf("round %d: entry %d = %s, want %s", round, i, e.ID, ids[i])
		}
	}
	for _, c := range s.chunks {
		if len(c.ents) == 0 || len(c.ents) > chunkMax {
			t.Fatalf("round %d: chunk of %d", round, len(c.ents))
		}
	}
	var sum [2]uint64
	for _, e := range ents {
		d := EntrySum(e.ID, e.Revision)
		sum[0], sum[1] = sum[0]+d[0], sum[1]+d[1]
	}
	if sum != s.ContentSum() {
		t.Fatalf("round %d: content sum %x, want %x", round, s.ContentSum(), sum)
	}
}
