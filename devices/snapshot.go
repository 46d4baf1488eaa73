package devices

import (
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"sync"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Snapshot is one immutable view of the catalog entries. A discovery
// message changes one device: the next snapshot shares everything else
// with this one (copy on write of the device's shard and of the chunks
// of its entries), so publishing it costs the same at 50 entries or at
// 50,000, and readers never lock.
type Snapshot struct {
	// Gen increments iff an entry was added, removed or changed in a
	// defined field. Live values never change it.
	Gen    uint64
	shards *[snapShards]map[string]*pilotage.Entry // by id; a device's entries share a shard
	chunks []*entryChunk                           // every entry, sorted by id
	n      int
	sum    [2]uint64

	flatOnce sync.Once
	flat     []*pilotage.Entry
}

// entryChunk is a run of entries sorted by id; never empty, never changed
// once a snapshot holds it.
type entryChunk struct{ ents []*pilotage.Entry }

// snapShards is the number of id maps; chunkMax the longest chunk (a
// longer one splits in two).
const (
	snapShards = 256
	chunkMax   = 256
)

func emptySnapshot() *Snapshot {
	var sh [snapShards]map[string]*pilotage.Entry
	return &Snapshot{shards: &sh}
}

// shardOf is the shard of an entry id: by its device part (before the
// first '.'), so one device's entries are one shard.
func shardOf(id string) int {
	h := uint32(2166136261)
	for i := 0; i < len(id) && id[i] != '.'; i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return int(h % snapShards)
}

// Entries returns the entries sorted by id. The slice and entries are shared
// and must be treated as read-only.
func (s *Snapshot) Entries() []*pilotage.Entry {
	s.flatOnce.Do(func() {
		s.flat = make([]*pilotage.Entry, 0, s.n)
		for _, c := range s.chunks {
			s.flat = append(s.flat, c.ents...)
		}
	})
	return s.flat
}

// Get returns the entry with this id.
func (s *Snapshot) Get(id string) (*pilotage.Entry, bool) {
	e, ok := s.shards[shardOf(id)][id]
	return e, ok
}

// Hash returns the content hash of the entry excluding its Revision, or ""
// for an unknown id. It is the entry's Revision.
func (s *Snapshot) Hash(id string) string {
	if e, ok := s.Get(id); ok {
		return e.Revision
	}
	return ""
}

// Len is the number of entries.
func (s *Snapshot) Len() int { return s.n }

// ContentSum is the sum over the entries of EntrySum(id, revision): it
// changes with any entry's id or content and not with their order, so a
// catalog version can be read from it without visiting the entries.
func (s *Snapshot) ContentSum() [2]uint64 { return s.sum }

// EntrySum is one entry's part of ContentSum: the first 16 bytes of
// SHA-256(id NUL revision) as two big-endian numbers.
func EntrySum(id, revision string) [2]uint64 {
	var buf [128]byte
	d := sha256.Sum256(append(append(append(buf[:0], id...), 0), revision...))
	return [2]uint64{binary.BigEndian.Uint64(d[0:8]), binary.BigEndian.Uint64(d[8:16])}
}

func (e *snapEdit) addSum(id, rev string, sign uint64) {
	d := EntrySum(id, rev)
	e.sum[0] += sign * d[0]
	e.sum[1] += sign * d[1]
}

// snapEdit derives the next snapshot from one: it copies what it changes
// (a shard map, a chunk) the first time it changes it.
type snapEdit struct {
	shards  [snapShards]map[string]*pilotage.Entry
	copied  [snapShards]bool
	chunks  []*entryChunk
	fresh   map[*entryChunk]bool // chunks made by this edit
	n       int
	sum     [2]uint64
	changed bool
}

func (s *Snapshot) edit() *snapEdit {
	return &snapEdit{shards: *s.shards, chunks: append([]*entryChunk(nil), s.chunks...), n: s.n, sum: s.sum,
		fresh: map[*entryChunk]bool{}}
}

func (e *snapEdit) shard(id string) map[string]*pilotage.Entry {
	i := shardOf(id)
	if !e.copied[i] {
		m := make(map[string]*pilotage.Entry, len(e.shards[i])+4)
		for k, v := range e.shards[i] {
			m[k] = v
		}
		e.shards[i], e.copied[i] = m, true
	}
	return e.shards[i]
}

// chunkFor returns the index of the chunk that holds (or would hold) id.
func (e *snapEdit) chunkFor(id string) int {
	i := sort.Search(len(e.chunks), func(i int) bool { return e.chunks[i].ents[0].ID > id }) - 1
	return max(i, 0)
}

// own makes chunk i this edit's own copy.
func (e *snapEdit) own(i int) *entryChunk {
	c := e.chunks[i]
	if !e.fresh[c] {
		c = &entryChunk{ents: append(make([]*pilotage.Entry, 0, len(c.ents)+1), c.ents...)}
		e.chunks[i], e.fresh[c] = c, true
	}
	return c
}

// put adds an entry or replaces the entry with its id.
func (e *snapEdit) put(en *pilotage.Entry) {
	e.changed = true
	sh := e.shard(en.ID)
	prev, had := sh[en.ID]
	if had {
		e.addSum(prev.ID, prev.Revision, ^uint64(0)) // times -1
	}
	e.addSum(en.ID, en.Revision, 1)
	sh[en.ID] = en
	if len(e.chunks) == 0 {
		c := &entryChunk{ents: []*pilotage.Entry{en}}
		e.chunks, e.fresh[c], e.n = []*entryChunk{c}, true, 1
		return
	}
	i := e.chunkFor(en.ID)
	c := e.own(i)
	k := sort.Search(len(c.ents), func(k int) bool { return c.ents[k].ID >= en.ID })
	if had {
		c.ents[k] = en
		return
	}
	e.n++
	c.ents = append(c.ents, nil)
	copy(c.ents[k+1:], c.ents[k:])
	c.ents[k] = en
	if len(c.ents) > chunkMax {
		half := len(c.ents) / 2
		right := &entryChunk{ents: append([]*pilotage.Entry(nil), c.ents[half:]...)}
		c.ents = c.ents[:half:half]
		e.fresh[right] = true
		e.chunks = append(e.chunks, nil)
		copy(e.chunks[i+2:], e.chunks[i+1:])
		e.chunks[i+1] = right
	}
}

// del removes the entry with this id (if any).
func (e *snapEdit) del(id string) {
	sh := e.shards[shardOf(id)]
	prev, ok := sh[id]
	if !ok {
		return
	}
	e.addSum(prev.ID, prev.Revision, ^uint64(0))
	e.changed = true
	delete(e.shard(id), id)
	e.n--
	i := e.chunkFor(id)
	c := e.own(i)
	k := sort.Search(len(c.ents), func(k int) bool { return c.ents[k].ID >= id })
	c.ents = append(c.ents[:k], c.ents[k+1:]...)
	if len(c.ents) == 0 {
		e.chunks = append(e.chunks[:i], e.chunks[i+1:]...)
	}
}

// done is the edited snapshot.
func (e *snapEdit) done(gen uint64) *Snapshot {
	sh := e.shards
	return &Snapshot{Gen: gen, shards: &sh, chunks: e.chunks, n: e.n, sum: e.sum}
}
