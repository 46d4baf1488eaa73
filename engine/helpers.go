package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/internal/cause"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// ErrHelpersOff: the house has no helper manager (SetHelpers).
var ErrHelpersOff = errors.New("engine: this house keeps no helpers")

// ErrNotOwner: only the owner creates, changes and deletes helpers.
var ErrNotOwner = errors.New("only the owner (an administrator who may deploy, with an unrestricted scope) may create, change or delete helpers")

// SetHelpers gives the engine the house's helpers: test runs simulate
// their actions with it, and callers manage them through it. Call it
// before Start.
func (e *Engine) SetHelpers(m *helpers.Manager) { e.helpers = m }

// HelperNote is the helpers' logbook writer: an entry of kind "helper"
// about device (in area), scoped as the device is; a change a rule made
// carries its principal and rule, so the storage files it in that
// principal's part of the rules' share.
func (e *Engine) HelperNote(c cause.Cause, device, area, text string) {
	e.book.Add(storage.LogEntry{T: e.Now(), Kind: "helper", Device: device, Area: area, Text: text, Principal: c.Who, Rule: c.Rule})
}

// Helpers lists the helpers the caller may see (their device entry is in
// its catalog scope).
func (e *Engine) Helpers(ctx context.Context) []helpers.Info {
	if e.helpers == nil {
		return nil
	}
	v := e.cat.View(e.principal(ctx))
	var out []helpers.Info
	for _, h := range e.helpers.List() {
		if en, ok := v.Get(h.Def.ID); ok && en.Kind == pilotage.KindDevice {
			out = append(out, h)
		}
	}
	return out
}

// MayManageHelpers reports whether the caller may create, change and
// delete helpers: an administrator who may deploy and sees the whole
// catalog (the owner), since a helper is household state every rule may
// read.
func (e *Engine) MayManageHelpers(ctx context.Context) bool {
	p := e.principal(ctx)
	s := p.Scope
	return p.Admin && p.Deploy && len(s.Areas) == 0 && len(s.Devices) == 0 && len(s.DenyDevices) == 0 &&
		len(s.Kinds) == 0 && len(s.DenyTypes) == 0 && len(s.DenyRisks) == 0
}

// PutHelper creates or updates a helper (the owner only).
func (e *Engine) PutHelper(ctx context.Context, d helpers.Def) (helpers.Info, error) {
	if err := e.helperAdmin(ctx); err != nil {
		return helpers.Info{}, err
	}
	return e.helpers.Put(ctx, d)
}

// DeleteHelper deletes a helper (the owner only).
func (e *Engine) DeleteHelper(ctx context.Context, id string) error {
	if err := e.helperAdmin(ctx); err != nil {
		return err
	}
	return e.helpers.Delete(ctx, id)
}

// RulesReading lists the installed rules, visible to the caller, whose
// programs name an entry of helper (or device) id: deleting it breaks
// them until a helper of that id is back.
func (e *Engine) RulesReading(ctx context.Context, id string) []string {
	p := e.principal(ctx)
	var reading []storage.Rule
	for _, ar := range e.sched.Rules() {
		if slices.ContainsFunc(ar.Compiled().Refs, func(ref string) bool { return access.DeviceOf(ref) == id }) {
			reading = append(reading, storage.Rule{Name: ar.Name(), Principal: ar.Principal().Name, Ref: ar.Ref()})
		}
	}
	var out []string
	for _, r := range reading { // visibleRule takes the scheduler's lock itself
		if e.visibleRule(p, r) {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (e *Engine) helperAdmin(ctx context.Context) error {
	if e.helpers == nil {
		return ErrHelpersOff
	}
	if !e.MayManageHelpers(ctx) {
		return fmt.Errorf("principal %s: %w", shown.Quote(e.principal(ctx).Name), ErrNotOwner)
	}
	return nil
}

// HelperDef and HelperInfo are the helpers' records as callers (the web
// UI) see them.
type (
	HelperDef  = helpers.Def
	HelperInfo = helpers.Info
	HelperKind = helpers.Kind
)

// HelperKinds is the closed set of helper kinds with what each holds.
var HelperKinds = helpers.Kinds

// HelperRefused reports whether err refuses what the caller asked (a bad
// definition, not the owner, no such helper) rather than failing.
func HelperRefused(err error) bool {
	return helpers.IsInvalid(err) || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrHelpersOff)
}
