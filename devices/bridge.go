package devices

import (
	"context"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/devices/internal/z2m"
	"github.com/pilothouse/pilothouse/mqtt"
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
//     a rebuild builds at most buildStep exposes anew and commits at most
//     commitStep entries (rebuildSpecs), then lets the messages waiting
//     for the lock in. Every step diffs the sources against the model
//     again, so a rebuild in between (a bridge/event, a config) leaves
//     nothing stale; the catalog shows the list's devices as they come.
//
// HandleMessage, called directly (tests, tools), still reads a list at
// once.
const (
	bridgeGap  = time.Second
	buildStep  = 20 * time.Millisecond
	commitStep = 1024
)

// bridgeQueue is the list waiting for bridgeLoop.
type bridgeQueue struct {
	mu   sync.Mutex
	on   bool   // bridgeLoop runs
	next []byte // the latest list not yet read
	wake chan struct{}
}

// deliver is the subscriptions' handler: a device list goes to
// bridgeLoop, the rest to HandleMessage's path, paced.
func (c *Catalog) deliver(m mqtt.Message) {
	if m.Topic == c.topics.devices && len(m.Payload) <= c.payloadBound(m.Topic) && c.queueBridge(m.Payload) {
		return
	}
	c.handle(m, true)
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
		for c.bridgeStep(nil) {
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
		c.z2m.Install(l)
		c.overBound.Store(int64(l.Over))
	})
}

// bridgeStep takes one paced step of a rebuild, after install (if any),
// under the ingest lock; true when a step has work left.
func (c *Catalog) bridgeStep(install func()) bool {
	c.ingest.Lock()
	defer c.ingest.Unlock()
	if install == nil && !c.rebuildLeft {
		return false
	}
	if install != nil {
		install()
	}
	tx := c.begin()
	tx.topic, tx.paced = c.topics.devices, true
	tx.specs = c.rebuildSpecs(tx)
	c.fanOut(tx, c.commitPhase(tx))
	return c.rebuildLeft
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
	c.rest, c.restGen = nil, c.specGen+1 // the gen this step's commit makes
	if cut < len(changes) && !more {
		c.rest = changes[cut:]
	}
	if c.rebuildLeft = more || cut < len(changes); c.rebuildLeft {
		c.wakeBridge()
	}
	return changes[:cut]
}

func specEntries(s *model.Spec) int {
	if s == nil {
		return 0
	}
	return len(s.Entries)
}
