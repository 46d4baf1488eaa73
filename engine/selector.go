package engine

import (
	"sync"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Selectors (calls and triggers by area, type or tag) are resolved
// against a principal's view, so a rule owner's selector never reaches
// past its scope, and again whenever the catalog moves, so a device
// swapped into an area is addressed without a redeploy.

// maxSelectMemo bounds the selectors one view remembers.
const maxSelectMemo = 256

// selectMemo remembers what selectors resolved to in one view (a view
// is immutable, so the answer never goes stale).
type selectMemo struct {
	mu sync.Mutex
	m  map[string][]string
}

// Select implements rules.Selecting: the entries of kind in v that sel
// addresses, sorted.
func (v *view) Select(kind pilotage.Kind, sel *rules.Selector) []string {
	key := string(kind) + "\x00" + sel.Key()
	v.sel.mu.Lock()
	ids, ok := v.sel.m[key]
	v.sel.mu.Unlock()
	if ok {
		return ids
	}
	all, _ := v.flat()
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

// Select resolves a selector in the firing's owner's scope, now.
func (w *liveWorld) Select(kind pilotage.Kind, sel *rules.Selector) []string {
	return w.e.cat.view(w.p).Select(kind, sel)
}

// selectorIndex finds the armed triggers by selector that watch a state:
// rebuilt from the armed ones (scheduler.selTrigs) when they or the
// device catalog changed since it was last built. Only the goroutine
// delivering changes uses it.
type selectorIndex struct {
	mu    sync.Mutex
	gen   uint64 // device catalog generation it was built at
	ver   uint64 // scheduler.selVer it was built at
	built bool
	byID  map[string][]*armedTrigger
}

// selected returns the triggers by selector watching state id.
func (s *scheduler) selected(id string) []*armedTrigger {
	s.mu.RLock()
	trigs, ver := s.selTrigs, s.selVer
	s.mu.RUnlock()
	if len(trigs) == 0 {
		return nil
	}
	var gen uint64
	if snap := s.e.cat.devSnapshot(); snap != nil {
		gen = snap.Gen
	}
	x := &s.selIdx
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built || x.gen != gen || x.ver != ver {
		x.byID = map[string][]*armedTrigger{}
		for _, at := range trigs {
			for _, sid := range s.e.cat.view(at.r.principal).Select(pilotage.KindState, at.t.Selector()) {
				x.byID[sid] = append(x.byID[sid], at)
			}
		}
		x.gen, x.ver, x.built = gen, ver, true
	}
	return x.byID[id]
}

// armSelector adds a trigger by selector; s.mu is held.
func (s *scheduler) armSelector(at *armedTrigger) {
	s.selTrigs = append(s.selTrigs[:len(s.selTrigs):len(s.selTrigs)], at)
	s.selVer++
}

// disarmSelector removes a trigger by selector; s.mu is held. The list
// is replaced, never changed in place (selected reads it unlocked).
func (s *scheduler) disarmSelector(at *armedTrigger) {
	for i, x := range s.selTrigs {
		if x == at {
			s.selTrigs = append(s.selTrigs[:i:i], s.selTrigs[i+1:]...)
			s.selVer++
			return
		}
	}
}
