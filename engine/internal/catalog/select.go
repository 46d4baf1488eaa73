package catalog

import (
	"sync"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// maxSelectMemo bounds the selectors one view remembers.
const maxSelectMemo = 256

// selectMemo remembers what selectors resolved to in one view (a view
// is immutable, so the answer never goes stale).
type selectMemo struct {
	mu sync.Mutex
	m  map[string][]string
}

// Select implements rules.Selecting: the entries of kind in v that sel
// addresses, sorted. Resolving in a principal's view is what keeps a
// selector inside its owner's scope.
func (v *View) Select(kind pilotage.Kind, sel *rules.Selector) []string {
	key := string(kind) + "\x00" + sel.Key()
	v.sel.mu.Lock()
	ids, ok := v.sel.m[key]
	v.sel.mu.Unlock()
	if ok {
		return ids
	}
	all, _ := v.Flat()
	ids = rules.ScanSelect(all, v.Get, kind, sel)
	v.sel.mu.Lock()
	defer v.sel.mu.Unlock()
	if v.sel.m == nil {
		v.sel.m = map[string][]string{}
	}
	if len(v.sel.m) < maxSelectMemo {
		v.sel.m[key] = ids
	}
	return ids
}

// SelectIndex finds the watchers (triggers by selector) of a state: the
// set of watchers is replaced on every change (Add, Remove, under the
// owner's lock) and the index is rebuilt from it when it or the device
// catalog generation changed since it was last built.
type SelectIndex[T comparable] struct {
	list []T    // replaced, never changed in place
	ver  uint64 // counts the changes of list

	mu    sync.Mutex
	gen   uint64 // device catalog generation byID was built at
	built uint64 // ver byID was built at (0 = never)
	byID  map[string][]T
}

// Add adds a watcher; the owner's lock is held.
func (x *SelectIndex[T]) Add(w T) {
	x.list = append(x.list[:len(x.list):len(x.list)], w)
	x.ver++
}

// Remove removes a watcher; the owner's lock is held.
func (x *SelectIndex[T]) Remove(w T) {
	for i, y := range x.list {
		if y == w {
			x.list = append(x.list[:i:i], x.list[i+1:]...)
			x.ver++
			return
		}
	}
}

// Snapshot is the watcher set and its version; the owner's (read) lock
// is held.
func (x *SelectIndex[T]) Snapshot() ([]T, uint64) { return x.list, x.ver }

// Lookup returns the watchers of state id among list (version ver), at
// device catalog generation gen; resolve lists the states one watches.
func (x *SelectIndex[T]) Lookup(id string, list []T, ver, gen uint64, resolve func(T) []string) []T {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.built != ver || x.gen != gen {
		x.byID = map[string][]T{}
		for _, w := range list {
			for _, sid := range resolve(w) {
				x.byID[sid] = append(x.byID[sid], w)
			}
		}
		x.gen, x.built = gen, ver
	}
	return x.byID[id]
}
