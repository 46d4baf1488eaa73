package devices

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/devices/internal/z2m"
)

// A Zigbee2MQTT device list from the bus (bridge/devices) names every
// device, up to 16 MiB of them: read at once, it held the subscription's
// delivery, and the ingest lock state messages need, for as long as it
// took (18 s for 8,000 devices of 30 exposes). So a list from the bus is
// read on a goroutine of its own (bridgeLoop), paced and in steps:
//
//   - the handler keeps only the latest list (a republish while one waits
//     replaces it) and returns;
//   - a list is read no sooner than bridgeGap, or the time the last one
//     took, after the last one began: a publisher gets at most half the
//     catalog's time;
//   - it is parsed, and its bounds applied (z2m.ParseDevices), without a
//     lock;
//   - each step then holds the ingest lock for a bounded part of the work:
//     it builds devices for buildStep and commits at most commitStep
//     entries (rebuildSpecs), then lets the messages waiting for the lock
//     in, and rests as long as it took. The first step diffs the sources against the model; the next
//     ones carry on with what it left (nextStep) while nothing else
//     changed the specs, else diff again, so a rebuild in between (a
//     bridge/event, a config) leaves nothing stale. The catalog shows the
//     list's devices as they come.
//
// HandleMessage, called directly (tests, tools), still reads a list at
// once.
const (
	bridgeGap  = time.Second
	buildStep  = 10 * time.Millisecond
	commitStep = 512
)

// bridgeQueue is the list waiting for bridgeLoop.
type bridgeQueue struct {
	mu   sync.Mutex
	on   bool   // bridgeLoop runs
	next []byte // the latest list not yet read
	wake chan struct{}
}

// queueBridge hands a list to bridgeLoop (false when it does not run).
func (c *Catalog) queueBridge(p []byte) bool {
	q := &c.bridge
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.on {
		return false
	}
	q.next = p
	c.wakeBridge()
	return true
}

func (c *Catalog) wakeBridge() {
	select {
	case c.bridge.wake <- struct{}{}:
	default:
	}
}

// startBridge starts bridgeLoop, until ctx is done.
func (c *Catalog) startBridge(ctx context.Context) {
	c.bridge.mu.Lock()
	c.bridge.on = true
	c.bridge.mu.Unlock()
	go c.bridgeLoop(ctx)
}

// bridgeLoop reads the lists handed to it, and finishes the rebuilds a
// step left work to.
func (c *Catalog) bridgeLoop(ctx context.Context) {
	var next time.Time // when the next list may be read
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.bridge.wake:
		}
		c.bridge.mu.Lock()
		waiting := c.bridge.next != nil
		c.bridge.mu.Unlock()
		if waiting && !sleepUntil(ctx, next) {
			return
		}
		begun := time.Now()
		c.bridge.mu.Lock()
		p := c.bridge.next
		c.bridge.next = nil
		c.bridge.mu.Unlock()
		if p != nil {
			c.readBridge(p)
		}
		for {
			s := time.Now()
			if !c.bridgeStep(nil) || !sleepUntil(ctx, time.Now().Add(time.Since(s))) {
				break // a step rests as long as it took: the list takes half the time at most
			}
		}
		if p != nil {
			next = time.Now().Add(max(bridgeGap, time.Since(begun)))
		}
	}
}

// sleepUntil waits until t; false when ctx ends first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// readBridge parses a list without a lock, then installs it and takes
// the first step of its rebuild.
func (c *Catalog) readBridge(p []byte) {
	c.configs.Add(1)
	l, refused := z2m.ParseDevices(c.log, c.opts.Z2MBase, p, c.opts.MaxListExposes)
	if refused {
		c.refused.Oversized.Add(1)
	}
	if l == nil {
		return
	}
	c.bridgeStep(func() {
		c.rebuildLeft = false // a full rebuild of the new list
		c.z2m.Install(l)
		c.overBound.Store(int64(l.Over))
	})
}

// bridgeStep takes one paced step of a rebuild, after install (if any),
// under the ingest lock; true when a step has work left. The ids it
// assigned are stored once the lock is released (a list's first step
// may assign thousands).
func (c *Catalog) bridgeStep(install func()) bool {
	c.ingest.Lock()
	if install == nil && !c.rebuildLeft {
		c.ingest.Unlock()
		return false
	}
	if install != nil {
		install()
	}
	tx := c.begin()
	tx.topic, tx.paced, tx.cont = c.topics.devices, true, install == nil
	tx.specs = c.rebuildSpecs(tx)
	subs := c.commitPhase(tx)
	save := tx.rebuilt
	tx.rebuilt = false
	c.fanOut(tx, subs)
	left := c.rebuildLeft
	var put []model.IDAssignment
	var del []string
	if save {
		put, del = c.ids.Pending()
	}
	c.ingest.Unlock()
	if len(put)+len(del) > 0 && c.storeIDs(put, del) {
		c.ingest.Lock()
		c.ids.Saved(put, del)
		c.ingest.Unlock()
	}
	return left
}

// takeStep cuts a paced rebuild's spec changes (in commit order) to
// about commitStep entries, and keeps the rest for the next step while
// no other commit changes the specs (c.restGen); more: Build left
// devices to build. Either way bridgeLoop takes another step.
func (c *Catalog) takeStep(changes []model.SpecChange, more bool) []model.SpecChange {
	n, cut := 0, len(changes)
	for i, ch := range changes {
		if i > 0 && n >= commitStep {
			cut = i
			break
		}
		n += max(1, specEntries(ch.Old)+specEntries(ch.New))
	}
	c.rest, c.restGen, c.buildLeft = nil, c.specGen+1, more // the gen this step's commit makes
	if cut < len(changes) {
		c.rest = changes[cut:]
	}
	if c.rebuildLeft = more || cut < len(changes); c.rebuildLeft {
		c.wakeBridge()
	}
	return changes[:cut]
}

// nextStep is the next step of a paced rebuild while nothing else
// changed the specs: the changes it left, and, once they are fewer than
// a step commits, those of the devices BuildMore builds (each replacing
// a change left for its device).
func (c *Catalog) nextStep() []model.SpecChange {
	changes, more := c.rest, c.buildLeft
	if c.buildLeft && len(changes) < commitStep {
		var specs []*model.Spec
		specs, more = c.z2m.BuildMore(c.log, c.ids, time.Now().Add(buildStep))
		built := make(map[string]bool, len(specs))
		for _, s := range specs {
			built[s.ID], c.z2mIDs[s.ID] = true, true
		}
		changes = slices.DeleteFunc(slices.Clone(changes), func(ch model.SpecChange) bool {
			return (ch.New != nil && built[specKey(ch.New)]) || (ch.Old != nil && built[specKey(ch.Old)])
		})
		for _, s := range specs {
			changes = append(changes, model.SpecChange{Old: c.model.specs[s.ID], New: s})
		}
		sortChanges(changes)
	}
	return c.takeStep(changes, more)
}

func specEntries(s *model.Spec) int {
	if s == nil {
		return 0
	}
	return len(s.Entries)
}
