package storage

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"slices"
)

// Counting without walking: every text row of the history carries seq,
// its entity's running count of rows, and vcounts, its entity's running
// count of rows per value (uvarints, one per value slot; history_values
// gives each of an entity's first maxTrackedValues values its slot). The
// changes of an entity in a range are then seq(last) - seq(first) + 1,
// and per value vcounts(last) - vcounts(first) + the first's own value:
// two index seeks on history_by_entity, whatever the rows between.
// Trimmed and purged rows change nothing: both ends are inside the range.
//
// Counts follow time order: a batch is numbered in time order, and a
// change older than its entity's latest stored one (a clock stepped back)
// moves cfrom past that latest: seeks count ranges from cfrom on.
// Numbers are not numbered (counts are read for text states) and move
// cfrom past them. history_last.n and .vcounts are the entity's latest;
// .vfrom is the time from which counts per value are exact (later than
// cfrom after a value past the tracked ones, or rows from before
// migration 13: NULL seq at a range's end sends it to a walk too).

// maxTrackedValues bounds the values counted per entity: a free-text
// state (a timestamp as text) would otherwise track one per row.
const maxTrackedValues = 32

// histSeqs is a batch's running counts: per point, and per entity.
type histSeqs struct {
	seq     []sql.NullInt64
	vcounts [][]byte
	ents    map[int64]*entSeq
}

// entSeq is one entity's counts as the batch leaves them.
type entSeq struct {
	loaded bool // its stored counts were read (at its first text point)
	n      int64
	cum    []uint64       // running count per slot
	slots  map[string]int // value → slot
	fresh  []string       // values given a slot by the batch, in slot order
	// vfrom and cfrom are the times to store: moved forward only when
	// forced (vforce, cforce), else kept (vfrom set when still NULL).
	vfrom, cfrom   int64
	vforce, cforce bool
	lastT          int64 // the latest stored change's time
}

// assignSeqs numbers the batch's text points in time order, reading each
// entity's counts once per batch.
func assignSeqs(ctx context.Context, tx *sql.Tx, pts []HistoryPoint, idOf func(string) int64) (*histSeqs, error) {
	hs := &histSeqs{seq: make([]sql.NullInt64, len(pts)), vcounts: make([][]byte, len(pts)), ents: map[int64]*entSeq{}}
	for _, i := range timeOrder(pts) {
		p := pts[i]
		id, t := idOf(p.Entity), p.T.UnixMilli()
		es := hs.ents[id]
		if es == nil {
			es = &entSeq{}
			hs.ents[id] = es
		}
		if p.IsNum {
			es.moveFrom(t + 1)
			continue
		}
		if !es.loaded {
			if err := es.load(ctx, tx, id, t); err != nil {
				return nil, err
			}
		}
		if t < es.lastT {
			es.moveFrom(es.lastT + 1)
		}
		es.n++
		hs.seq[i] = sql.NullInt64{Int64: es.n, Valid: true}
		hs.vcounts[i] = es.count(p.JSON, t)
	}
	return hs, nil
}

// moveFrom makes counts by seeks start at t at the earliest.
func (es *entSeq) moveFrom(t int64) {
	es.cfrom, es.cforce = max(es.cfrom, t), true
	es.vfrom, es.vforce = max(es.vfrom, t), true
}

// timeOrder is the indexes of pts in time order (stable).
func timeOrder(pts []HistoryPoint) []int {
	order := make([]int, len(pts))
	sorted := true
	for i := range order {
		order[i] = i
		sorted = sorted && (i == 0 || !pts[i].T.Before(pts[i-1].T))
	}
	if !sorted {
		slices.SortStableFunc(order, func(a, b int) int { return pts[a].T.Compare(pts[b].T) })
	}
	return order
}

// load reads an entity's counts and value slots; an entity counted from
// now on while it has rows from before (no seq) is counted per value
// exactly from first.
func (es *entSeq) load(ctx context.Context, tx *sql.Tx, id, first int64) error {
	es.loaded, es.slots = true, map[string]int{}
	var vc []byte
	err := tx.QueryRowContext(ctx, `SELECT n, t, vcounts FROM history_last WHERE entity = ?`, id).Scan(&es.n, &es.lastT, &vc)
	if err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("storage: write history: counts of entity %d: %w", id, err)
	}
	es.cum = decodeCounts(vc)
	if es.n == 0 {
		var old bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM history WHERE entity = ?)`, id).Scan(&old); err != nil {
			return fmt.Errorf("storage: write history: counts of entity %d: %w", id, err)
		}
		if old {
			es.vfrom = max(es.vfrom, first)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT val, slot FROM history_values WHERE entity = ?`, id)
	if err != nil {
		return fmt.Errorf("storage: write history: values of entity %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		var slot int
		if err := rows.Scan(&v, &slot); err != nil {
			return fmt.Errorf("storage: write history: values of entity %d: %w", id, err)
		}
		es.slots[v] = slot
	}
	return rows.Err()
}

// count adds a text value to the running counts and returns them; past
// the tracked values it is not counted (nil), and counts per value by
// seeks start after it.
func (es *entSeq) count(v string, t int64) []byte {
	slot, ok := es.slots[v]
	if !ok {
		if len(es.slots) >= maxTrackedValues {
			es.vfrom, es.vforce = max(es.vfrom, t+1), true
			return nil
		}
		slot = len(es.slots)
		es.slots[v], es.fresh = slot, append(es.fresh, v)
	}
	for len(es.cum) <= slot {
		es.cum = append(es.cum, 0)
	}
	es.cum[slot]++
	return encodeCounts(es.cum)
}

// writeValues stores the value slots the batch gave.
func (hs *histSeqs) writeValues(ctx context.Context, tx *sql.Tx) error {
	for id, es := range hs.ents {
		for _, v := range es.fresh {
			if _, err := tx.ExecContext(ctx, `INSERT INTO history_values (entity, val, slot) VALUES (?, ?, ?)`, id, v, es.slots[v]); err != nil {
				return fmt.Errorf("storage: write history: value slots: %w", err)
			}
		}
	}
	return nil
}

func encodeCounts(cum []uint64) []byte {
	b := make([]byte, 0, len(cum)*3)
	for _, n := range cum {
		b = binary.AppendUvarint(b, n)
	}
	return b
}

func decodeCounts(b []byte) []uint64 {
	var out []uint64
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			break
		}
		out, b = append(out, n), b[k:]
	}
	return out
}
