package devices

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// saveTimeout bounds one write of the registry.
const saveTimeout = 5 * time.Second

// loadIDs reads the registry into the catalog (Start, before subscribing)
// and rebuilds, so that devices known already take their pinned ids.
func (c *Catalog) loadIDs(ctx context.Context) error {
	if c.opts.IDs == nil {
		return nil
	}
	as, err := c.opts.IDs.LoadDeviceIDs(ctx)
	if err != nil {
		return err
	}
	c.ingest.Lock()
	defer c.ingest.Unlock()
	for _, a := range c.ids.Load(as) {
		c.log.Warn("device id registry: conflicting assignment ignored", "key", a.Key, "id", a.ID, "left", a.Left)
	}
	tx := c.begin()
	tx.specs = c.rebuildSpecs(tx)
	c.fanOut(tx, c.commitPhase(tx)) // saves the ids
	return nil
}

// saveIDs writes the id changes of the last rebuilds (ingest lock held, not
// mu). A failed write is logged and retried after the next rebuild; the
// ids hold in memory meanwhile.
func (c *Catalog) saveIDs() {
	put, del := c.ids.Pending()
	if len(put)+len(del) > 0 && c.storeIDs(put, del) {
		c.ids.Saved(put, del)
	}
}

// storeIDs writes id changes to the registry (no lock needed: writes are
// serialised by saveMu, and Saved forgets only what is still as
// written); false when it failed (logged).
func (c *Catalog) storeIDs(put []model.IDAssignment, del []string) bool {
	if c.opts.IDs == nil {
		return true
	}
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := c.opts.IDs.SaveDeviceIDs(ctx, put, del); err != nil {
		c.log.Error("device id registry: saving failed; the ids hold until restart and the save is retried at the next discovery change",
			"stored", len(put), "freed", len(del), "err", err)
		return false
	}
	return true
}
