package catalog

import "slices"

// A rule bound to entries by catalog-reference params is hidden from
// whoever cannot see one of them (boundVisible); so is the promoted
// program it is installed on, in every catalog answer, or a get by ref
// would show the name, risk and input schema of a rule the caller cannot
// see (spec 6.3: an unauthorized name is indistinguishable from a
// nonexistent one). The scheduler tells the catalog what each installed
// rule is bound to.

// SetBound records that the installed rule name runs program ref bound to
// ids (nil: not bound; ref "": removed). A change rebuilds the views.
func (c *Service) SetBound(name, ref string, ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	oldRef, had := c.boundRef[name]
	if len(ids) == 0 || ref == "" {
		if !had {
			return
		}
	} else if had && oldRef == ref && slices.Equal(c.boundOn[ref][name], ids) {
		return
	}
	if had {
		delete(c.boundOn[oldRef], name)
		if len(c.boundOn[oldRef]) == 0 {
			delete(c.boundOn, oldRef)
		}
		delete(c.boundRef, name)
	}
	if len(ids) > 0 && ref != "" {
		if c.boundOn[ref] == nil {
			c.boundOn[ref] = map[string][]string{}
		}
		c.boundOn[ref][name], c.boundRef[name] = ids, ref
	}
	c.bindGen++
}
