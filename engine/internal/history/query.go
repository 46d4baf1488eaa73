package history

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// This file is the reading side: a state entry's recorded history over a
// range, as changes when there are few, else as buckets.

// EntityHistory is a state entry's history over a range.
type EntityHistory struct {
	ID      string    `json:"id"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Numeric bool      `json:"numeric"`
	Unit    string    `json:"unit,omitempty"`
	// Count is how many changes were recorded in the range; Counts, for
	// a state that is not numeric, how many set each value (keys are the
	// values as JSON: "true", "\"ON\"").
	Count  int            `json:"count"`
	Counts map[string]int `json:"counts,omitempty"`
	// CountsOf, when set, says Counts cover only the range's latest
	// CountsOf changes (values not counted by the store: a state with
	// many distinct values, or changes recorded by an older version).
	CountsOf int `json:"counts_of,omitempty"`
	// Start is the value in force when the range began (its last change
	// before From), when one is recorded.
	Start *Change `json:"start,omitempty"`
	// Changes, when the range holds at most Points of them; else Bands
	// (not numeric) summarise each bucket. Numeric states have Buckets.
	Changes       []Change     `json:"changes,omitempty"`
	Bands         []BandBucket `json:"bands,omitempty"`
	Buckets       []NumBucket  `json:"buckets,omitempty"`
	BucketSeconds int64        `json:"bucket_seconds,omitempty"`
}

// Change is one recorded change.
type Change struct {
	T     time.Time `json:"t"`
	Value any       `json:"value"`
}

// NumBucket summarises a numeric state's changes in one bucket.
type NumBucket struct {
	T    time.Time `json:"t"`
	N    int       `json:"n"`
	Min  float64   `json:"min"`
	Max  float64   `json:"max"`
	Mean float64   `json:"mean"`
}

// BandBucket is one bucket of a state that changed too often to list:
// how many changes it saw and the last value it was set to.
type BandBucket struct {
	T    time.Time `json:"t"`
	N    int       `json:"n"`
	Last any       `json:"last"`
}

// Read fills h (its ID, range, Numeric and Unit set) from the store: the
// value before from, then every change when there are at most points of
// them, else one bucket per 1/points of the range (numeric states always
// as buckets); per-value counts are bounded by maxValues.
func Read(ctx context.Context, st *storage.Store, h *EntityHistory, id string, from, to time.Time, points, maxValues int) error {
	w := BucketWidth(to.Sub(from), points)
	if sv, ok, err := st.HistoryBefore(ctx, id, from); err != nil {
		return err
	} else if ok {
		h.Start = &Change{T: sv.T, Value: Value(sv)}
	}
	if h.Numeric {
		bs, err := st.HistoryNumBuckets(ctx, id, from, to, w)
		h.BucketSeconds = int64(w / time.Second)
		h.Buckets = make([]NumBucket, len(bs))
		for i, b := range bs {
			h.Buckets[i] = NumBucket{T: b.T, N: b.N, Min: b.Lo, Max: b.Hi, Mean: b.Mean}
			h.Count += b.N
		}
		return err
	}
	n, err := st.HistoryCount(ctx, id, from, to)
	if err != nil {
		return err
	}
	h.Count = n
	var walked int
	if h.Counts, walked, err = st.HistoryValueCounts(ctx, id, from, to, maxValues); err != nil {
		return err
	}
	if walked > 0 && walked < n {
		h.CountsOf = walked
	}
	if n <= points {
		ch, err := st.HistoryChanges(ctx, id, from, to, points)
		h.Changes = make([]Change, len(ch))
		for i, c := range ch {
			h.Changes[i] = Change{T: c.T, Value: Value(c)}
		}
		return err
	}
	bs, err := st.HistoryLastBuckets(ctx, id, from, to, w)
	h.BucketSeconds = int64(w / time.Second)
	h.Bands = make([]BandBucket, len(bs))
	for i, b := range bs {
		h.Bands[i] = BandBucket{T: b.T, N: b.N, Last: Value(b.Last)}
	}
	return err
}
