package helpers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/cause"
	"github.com/pilothouse/pilothouse/storage"
)

// Start loads the stored helpers, makes the configuration file's (config)
// the stored ones, and serves them all in the catalog. A timer that
// should have finished while the server was down finishes now, and the
// logbook says so. Call it once the rules are armed, so that they see
// those ends.
func (m *Manager) Start(ctx context.Context, config []Def) error {
	return m.StartWithDefaults(ctx, config, nil)
}

// StartWithDefaults is Start with defaults (the demo house's helpers)
// served as the configuration file's are, except where the file or the
// owner already has a helper of that id: theirs wins.
func (m *Manager) StartWithDefaults(ctx context.Context, config, defaults []Def) error {
	m.admin.Lock()
	defer m.admin.Unlock()
	stored, err := m.load(ctx)
	if err != nil {
		return err
	}
	want, err := m.merge(stored, config, defaults)
	if err != nil {
		return err
	}
	for id, old := range stored {
		if want[id] == nil {
			m.dropped(id, old)
		}
		if want[id] == nil || want[id] != old {
			if err := m.forget(ctx, id, want[id] == nil); err != nil {
				return err
			}
		}
	}
	now := m.o.Now()
	for _, id := range sortedIDs(want) {
		if err := m.serve(ctx, want[id], stored[id] != want[id], now); err != nil {
			m.o.Log.Error("a helper is not served", "helper", id, "err", err)
			m.notServed(id, fmt.Sprintf("helper %s is not served: %v", id, err))
		}
	}
	return nil
}

// merge makes the helpers to serve: the stored ones made over MCP or the
// web UI, and the configuration file's, which keep their stored values. A
// file's helper whose id one of the others holds is not served, so that
// starting with a file never destroys what a user made elsewhere. A
// default is served as a file's is unless a helper of the file or the
// user has its id.
func (m *Manager) merge(stored map[string]*helper, config, defaults []Def) (map[string]*helper, error) {
	want := map[string]*helper{}
	for _, h := range stored {
		if h.source != SourceConfig {
			want[h.def.ID] = h
		}
	}
	for i, d := range config {
		if err := d.Normalize(); err != nil {
			return nil, fmt.Errorf("helpers[%d] (%s): %w", i, d.ID, err)
		}
		if prev := want[d.ID]; prev != nil {
			if prev.source == SourceConfig {
				return nil, fmt.Errorf("helpers[%d]: id %q is given twice", i, d.ID)
			}
			m.o.Log.Error("a helper of the configuration file is not served: a helper made over MCP or the web UI has its id (delete that one first, or choose another id)",
				"item", fmt.Sprintf("helpers[%d]", i), "helper", d.ID, "kept", prev.def.Kind)
			item := fmt.Sprintf("helpers[%d]", i)
			m.notServed(item, fmt.Sprintf("the configuration file's %s (%s) is not served: a helper made over MCP or the web UI has its id", item, d.ID))
			continue
		}
		h := &helper{def: d, source: SourceConfig, value: d.initial()}
		if old := stored[d.ID]; old != nil {
			h.value, h.by = d.keep(old.value), old.by
		}
		want[d.ID] = h
	}
	for _, d := range defaults {
		if want[d.ID] != nil {
			continue
		}
		if err := d.Normalize(); err != nil {
			return nil, fmt.Errorf("default helper %s: %w", d.ID, err)
		}
		h := &helper{def: d, source: SourceConfig, demo: true, value: d.initial()}
		if old := stored[d.ID]; old != nil {
			h.value, h.by = d.keep(old.value), old.by
		}
		want[d.ID] = h
	}
	return want, nil
}

// dropped says that a helper of the configuration file, or of the demo
// house (whose helpers are served as the file's), is gone from both, with
// the value that goes with it: a stored row does not say which it was.
func (m *Manager) dropped(id string, old *helper) {
	val, _ := json.Marshal(old.value["state"])
	m.o.Log.Warn("a helper of the configuration file or of the demo house is in neither now (the demo is off, or the file no longer has it): removed with its state", "helper", id, "state", string(val))
	m.o.Note(cause.Cause{}, id, old.def.Area, id+": removed, in neither the configuration file nor the demo house now (its state was "+string(val)+")")
}

// load reads the stored helpers; one that no longer reads is logged and
// left out (its row stays for a later version to read).
func (m *Manager) load(ctx context.Context) (map[string]*helper, error) {
	out := map[string]*helper{}
	if m.o.Store == nil {
		return out, nil
	}
	rows, err := m.o.Store.LoadHelpers(ctx)
	if err != nil {
		return nil, fmt.Errorf("helpers: %w", err)
	}
	for _, r := range rows {
		h := &helper{source: r.Source}
		err := json.Unmarshal([]byte(r.Def), &h.def)
		if err == nil {
			err = h.def.Normalize()
		}
		if err == nil {
			err = json.Unmarshal([]byte(r.Value), &h.value)
		}
		if err != nil {
			m.o.Log.Error("a stored helper does not read: not served", "helper", r.ID, "err", err)
			continue
		}
		h.by = takeStartedBy(h.value)
		h.value = h.def.keep(h.value)
		out[r.ID] = h
	}
	return out, nil
}

func (m *Manager) forget(ctx context.Context, id string, gone bool) error {
	if !gone || m.o.Store == nil {
		return nil
	}
	if err := m.o.Store.DeleteHelper(ctx, id); err != nil {
		return fmt.Errorf("helpers: %w", err)
	}
	return nil
}

// serve stores h when it is new or changed, finishes an overdue timer,
// and puts it in the catalog.
func (m *Manager) serve(ctx context.Context, h *helper, write bool, now time.Time) error {
	overdue := finishesAt(h.value)
	late := !overdue.IsZero() && !overdue.After(now)
	by := h.by
	if late {
		out, _ := h.def.apply(h.value, "finish", nil, now)
		h.value, h.by, write = out.value, cause.Cause{}, true
	}
	if write {
		if err := m.put(ctx, h); err != nil {
			return err
		}
	}
	m.mu.Lock()
	prev := m.byID[h.def.ID]
	m.byID[h.def.ID] = h
	vals := h.values()
	m.mu.Unlock()
	if err := m.o.Catalog.PutLocal(m.device(&h.def), vals); err != nil {
		m.mu.Lock()
		delete(m.byID, h.def.ID)
		if prev != nil {
			m.byID[h.def.ID] = prev
		}
		m.mu.Unlock()
		return fmt.Errorf("helpers: %w: %w", ErrInvalid, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.unserved, h.def.ID)
	for id, v := range h.values() {
		m.o.Catalog.SetLocal(id, v) // an action's change since vals (else nothing)
	}
	if late {
		id := h.def.ID
		m.o.Catalog.FireLocal(id+".finished", "finished")
		m.o.Note(by, id, h.def.Area, id+": finished while Pilothouse was not running (it was due at "+overdue.Format(time.RFC3339)+")")
	}
	m.scheduleLocked(h)
	return nil
}

func (m *Manager) put(ctx context.Context, h *helper) error {
	if m.o.Store == nil {
		return nil
	}
	def, err := json.Marshal(h.def)
	if err != nil {
		return err
	}
	val, err := encodeValue(h.value, h.by)
	if err != nil {
		return err
	}
	if err := m.o.Store.PutHelper(ctx, storage.Helper{ID: h.def.ID, Def: string(def), Source: h.source, Value: string(val)}); err != nil {
		return fmt.Errorf("helpers: %w", err)
	}
	return nil
}

// values are the helper's catalog states (state id → value).
func (h *helper) values() map[string]any {
	out := make(map[string]any, len(h.value))
	for k, v := range h.value {
		out[h.def.ID+"."+k] = v
	}
	return out
}

// keep is v as far as it fits d: a value the definition no longer admits
// (an option removed, a bound moved) starts again from the initial one.
func (d *Def) keep(v Value) Value {
	init := d.initial()
	if d.Kind == Timer {
		if s := toString(v["state"]); s == TimerActive || s == TimerPaused {
			if _, ok := number(v["remaining"]); ok {
				return Value{"state": s, "remaining": v["remaining"], "finishes_at": v["finishes_at"]}
			}
		}
		return init
	}
	if cur, ok := v["state"]; ok && (cur == nil && d.Kind == DateTime) {
		return Value{"state": nil}
	}
	if cv, err := d.checkValue(v["state"]); err == nil {
		return Value{"state": cv}
	}
	return init
}

func sortedIDs(m map[string]*helper) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Put creates or updates a helper made over MCP or the web UI (source
// SourceAPI); its value is kept where the new definition admits it.
func (m *Manager) Put(ctx context.Context, d Def) (Info, error) {
	if err := d.Normalize(); err != nil {
		return Info{}, err
	}
	m.admin.Lock()
	defer m.admin.Unlock()
	m.mu.Lock()
	old := m.byID[d.ID]
	n := len(m.byID)
	m.mu.Unlock()
	h := &helper{def: d, source: SourceAPI, value: d.initial()}
	switch {
	case old != nil && old.source == SourceConfig && !old.demo: // the owner's replaces a demo one
		return Info{}, fmt.Errorf("helpers: %s: %w", d.ID, ErrConfigured)
	case old == nil && n >= m.o.Max:
		return Info{}, fmt.Errorf("%w: a house holds at most %d helpers", ErrInvalid, m.o.Max)
	case old != nil:
		m.mu.Lock()
		if old.def.Kind == d.Kind {
			h.value, h.by = d.keep(old.value), old.by
		}
		stopLocked(old)
		m.mu.Unlock()
	}
	if err := m.serve(ctx, h, true, m.o.Now()); err != nil {
		if old == nil {
			_ = m.forget(ctx, d.ID, true)
		} else {
			_ = m.put(ctx, old)
			m.mu.Lock()
			m.scheduleLocked(old)
			m.mu.Unlock()
		}
		return Info{}, err
	}
	info, _ := m.Get(d.ID)
	return info, nil
}

// Delete removes a helper made over MCP or the web UI.
func (m *Manager) Delete(ctx context.Context, id string) error {
	m.admin.Lock()
	defer m.admin.Unlock()
	m.mu.Lock()
	h := m.byID[id]
	m.mu.Unlock()
	switch {
	case h == nil:
		return fmt.Errorf("helpers: %s: %w", id, ErrNotFound)
	case h.demo:
		return fmt.Errorf("helpers: %s: %w", id, ErrDemo)
	case h.source == SourceConfig:
		return fmt.Errorf("helpers: %s: %w", id, ErrConfigured)
	}
	if err := m.forget(ctx, id, true); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.byID, id)
	stopLocked(h)
	m.mu.Unlock()
	m.o.Catalog.RemoveLocal(id)
	return nil
}

// IsInvalid reports whether err refuses what the caller asked (not a
// failure of the house).
func IsInvalid(err error) bool {
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrConfigured) || errors.Is(err, ErrDemo) || errors.Is(err, ErrNotFound) || errors.Is(err, devices.ErrIDTaken)
}
