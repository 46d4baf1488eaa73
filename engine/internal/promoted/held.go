package promoted

import (
	"encoding/json"
	"sync"

	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Held is the promoted bodies held in memory, by program_ref: the
// installed versions from start-up, any other once it is first used.
type Held struct {
	mu     sync.Mutex
	bodies map[string]*Body
}

// Get returns ref's body if it is held.
func (h *Held) Get(ref string) *Body {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bodies[ref]
}

// Keep holds b as ref's body, unless one is held already (refs are
// content-addressed: it is the same program), and returns the held one.
func (h *Held) Keep(ref string, b *Body) *Body {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.bodies[ref]; old != nil {
		return old
	}
	if h.bodies == nil {
		h.bodies = map[string]*Body{}
	}
	h.bodies[ref] = b
	return b
}

// Stored is the promoted body of a stored program compiled as c.
func Stored(pr storage.Program, c *rules.Compiled) *Body {
	var base map[string]BaselineField
	_ = json.Unmarshal(pr.Baseline, &base)
	return NewBody(c, pr.Ref, Sums(base))
}
