package z2m

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A group with members is one catalog device, as Home Assistant's
// Zigbee2MQTT integration shows it as one light or switch: its states and
// actions are the features of the light, switch, lock, cover, fan or
// climate that all its members share (each in the narrowest form all
// accept), read from <base>/<group> and set through <base>/<group>/set.
// Its set action is as risky as the riskiest action of a member, since
// the command reaches every member; a member Zigbee2MQTT does not list
// (or lists without a definition) makes that unknown: the group is
// listed, saying why, without actions, and its topic counts as security.

type groupCached struct {
	raw     json.RawMessage
	members []*model.Spec // each member's spec (nil: not listed; unbuilt: listed, not built)
	spec    *model.Spec
}

// unbuilt marks a member listed but not built (disabled, or the coordinator).
var unbuilt = &model.Spec{}

// groupKinds are the exposes a group takes its features from.
var groupKinds = []string{"light", "switch", "lock", "cover", "fan", "climate"}

// buildGroups makes the specs of the groups with members; each group's id
// is claimed under its Zigbee2MQTT group id. built holds the devices'
// specs by IEEE address.
func (z *Source) buildGroups(log *slog.Logger, ids *model.IDTable, built map[string]*model.Spec) []*model.Spec {
	if len(z.groups) == 0 {
		z.gcache = nil
		return nil
	}
	listed := make(map[string]int, len(z.devices))
	for i := range z.devices {
		listed[z.devices[i].ieee] = i
	}
	cache := make(map[int64]groupCached, len(z.groups))
	var out []*model.Spec
	for i := range z.groups {
		g := &z.groups[i]
		key := model.GroupKey(g.ID)
		if len(g.Members) == 0 {
			ids.Keep(key) // not listed (HandleGroups said so); its id stays
			continue
		}
		id, _ := ids.Claim(key, model.FirstNonEmpty(model.Slug(g.FriendlyName), "group_"+strconv.FormatInt(g.ID, 10)))
		ms := make([]*model.Spec, len(g.Members))
		for j, ieee := range g.Members {
			if s, ok := built[ieee]; ok {
				ms[j] = s
			} else if _, ok := listed[ieee]; ok {
				ms[j] = unbuilt
			}
		}
		ent, ok := z.gcache[g.ID]
		if !ok || ent.spec.ID != id || !bytes.Equal(ent.raw, g.raw) || !slices.Equal(ent.members, ms) {
			ent = groupCached{raw: g.raw, members: ms, spec: z.buildGroup(log, id, g, ms, listed)}
			model.SetArea(z.areas, ent.spec)
			ent.spec.BuildEntries(z.in)
		}
		cache[g.ID] = ent
		ids.Share(key, ent.spec.ID)
		out = append(out, ent.spec)
	}
	z.gcache = cache
	return out
}

// buildGroup makes group g's spec; ms are its members' specs and listed
// the index of each listed device.
func (z *Source) buildGroup(log *slog.Logger, id string, g *Group, ms []*model.Spec, listed map[string]int) *model.Spec {
	risk := groupRisk(g, ms)
	defs, gap := z.memberExposes(g, ms, listed)
	var common []Expose
	if gap == "" {
		if common = commonExposes(defs); len(common) == 0 {
			gap = "its members share no light, switch, lock, cover, fan or climate feature"
		}
	}
	var s *model.Spec
	if gap != "" {
		s = z.unmodelledGroup(id, g)
		s.Desc = groupDesc(g, ms, s.Z2MTopic) + " It has no actions: " + gap + "."
		log.Warn("zigbee2mqtt group listed without actions", "group", g.FriendlyName, "id", g.ID, "why", gap)
	} else {
		d := &Device{FriendlyName: g.FriendlyName, Definition: &z2mDefinition{Vendor: "Zigbee2MQTT", Model: "group", Exposes: common}}
		s = z.buildDevice(log, id, d)
		s.Desc = groupDesc(g, ms, s.Z2MTopic)
		groupActions(s, g, risk)
	}
	if risk.Hints.Destructive || risk.Hints.OpenWorld {
		s.Desc += " A command to it is of risk " + string(pilotage.RiskOf(risk.Hints)) + ": " + risk.Why + "."
	}
	s.Tags = append(s.Tags, "group")
	s.Group = &risk
	return s
}

// unmodelledGroup is the spec of a group whose features are not known.
func (z *Source) unmodelledGroup(id string, g *Group) *model.Spec {
	s := &model.Spec{ID: id, Name: g.FriendlyName, Source: "zigbee2mqtt", Manufacturer: "Zigbee2MQTT", ModelName: "group",
		Fidelity: model.FidelityNone, Tags: []string{model.TagUnmodelled}}
	n := z2mDeviceNames(s, id, &Device{FriendlyName: g.FriendlyName}, z.base)
	s.Z2MTopic = n.topic
	z.routeAvailability(s, n.avail)
	return s
}

// maxNamedMembers bounds the members a group's description names.
const maxNamedMembers = 10

// groupDesc describes group g, whose topic is topic.
func groupDesc(g *Group, ms []*model.Spec, topic string) string {
	names := make([]string, 0, min(len(ms), maxNamedMembers))
	for j := range ms {
		if j == maxNamedMembers {
			names = append(names, fmt.Sprintf("and %d more", len(ms)-j))
			break
		}
		names = append(names, memberName(g, ms, j))
	}
	d := fmt.Sprintf("Zigbee2MQTT group %d of %d members (%s): its states and actions are the features all members share; "+
		"a command to %s/set reaches every member.", g.ID, len(ms), strings.Join(names, ", "), topic)
	if g.Description != "" {
		d = g.Description + " — " + d
	}
	return d
}

// memberName is how member j of g is named: its catalog name, else its
// IEEE address.
func memberName(g *Group, ms []*model.Spec, j int) string {
	if s := ms[j]; s != nil && s != unbuilt && len(s.Entries) > 0 && s.Entries[0].Name != "" {
		return s.Entries[0].Name
	}
	return g.Members[j]
}

// groupRisk is the risk of a command to group g: the highest of its
// members' actions, security for a member whose actions are not known.
func groupRisk(g *Group, ms []*model.Spec) model.GroupRisk {
	r := model.GroupRisk{Hints: pilotage.HintsOf(pilotage.RiskRead)}
	raise := func(h pilotage.RiskHints, why string) {
		if agg := pilotage.Aggregate(r.Hints, h); agg != r.Hints {
			r.Hints, r.Why = agg, why
		}
	}
	security := pilotage.HintsOf(pilotage.RiskSecurity)
	for j, s := range ms {
		switch s {
		case nil:
			raise(security, "its member "+g.Members[j]+" is not in Zigbee2MQTT's device list, so it could be any device")
		case unbuilt:
			raise(security, "its member "+g.Members[j]+" is disabled in Zigbee2MQTT, so what it does is not known")
		default:
			for i := range s.Entries {
				if e := &s.Entries[i]; e.Kind == pilotage.KindAction && !e.RiskHints.ReadOnly {
					raise(e.RiskHints, fmt.Sprintf("its member %s has the action %s, of risk %s", memberName(g, ms, j), e.ID, e.Risk))
				}
			}
		}
	}
	return r
}

// groupActions makes the group's set action as risky as its riskiest
// member and says so, and describes its actions as the group's.
func groupActions(s *model.Spec, g *Group, risk model.GroupRisk) {
	for _, a := range s.Actions {
		if a.ID != s.ID+".set" {
			continue
		}
		own := pilotage.HintsOf(a.Risk)
		a.Desc = fmt.Sprintf("Set what all %d members of group %s share; publishes a JSON object to %s/set, which Zigbee2MQTT sends to every member.",
			len(g.Members), g.FriendlyName, s.Z2MTopic)
		if agg := pilotage.Aggregate(own, risk.Hints); agg != own {
			a.Risk = pilotage.RiskOf(agg)
			a.Desc += " Its risk is " + string(a.Risk) + ": " + risk.Why + "."
		}
	}
}

// memberExposes are the exposes of each member of g, or why they are not
// known.
func (z *Source) memberExposes(g *Group, ms []*model.Spec, listed map[string]int) ([][]Expose, string) {
	out := make([][]Expose, 0, len(ms))
	for j, s := range ms {
		if s == nil {
			return nil, "its member " + g.Members[j] + " is not in Zigbee2MQTT's device list"
		}
		var d Device
		if err := json.Unmarshal(z.raws[listed[g.Members[j]]], &d); err != nil || d.Definition == nil || s == unbuilt {
			return nil, "what its member " + memberName(g, ms, j) + " does is not known (disabled, not interviewed or not supported)"
		}
		out = append(out, d.Definition.Exposes)
	}
	return out, ""
}

// commonExposes are the exposes of the kinds every member has, each with
// the features all share.
func commonExposes(defs [][]Expose) []Expose {
	var out []Expose
	for _, kind := range groupKinds {
		lists := make([][]Expose, len(defs))
		for i, d := range defs {
			if lists[i] = kindFeatures(d, kind); len(lists[i]) == 0 {
				lists = nil
				break
			}
		}
		if lists == nil {
			continue
		}
		if fs := commonFeatures(lists); len(fs) > 0 {
			out = append(out, Expose{Type: kind, Features: fs})
		}
	}
	return out
}

// kindFeatures are the features of the exposes of kind in exposes, each
// name once (the first endpoint's), without their endpoint: a group's
// state and commands carry none.
func kindFeatures(exposes []Expose, kind string) []Expose {
	var out []Expose
	seen := map[string]bool{}
	for _, e := range exposes {
		if e.Type != kind {
			continue
		}
		for _, f := range e.Features {
			if f.Endpoint != "" {
				if f.Property == f.Name+"_"+f.Endpoint {
					f.Property = f.Name
				}
				f.Endpoint = ""
			}
			if k := featureKey(f); k != "" && !seen[k] {
				seen[k] = true
				out = append(out, f)
			}
		}
	}
	return out
}

func featureKey(f Expose) string { return model.FirstNonEmpty(f.Name, f.Property) }

// commonFeatures are the features of lists[0] that every list has, each
// narrowed to what all accept.
func commonFeatures(lists [][]Expose) []Expose {
	var out []Expose
	for _, f := range lists[0] {
		all := []Expose{f}
		for _, l := range lists[1:] {
			i := slices.IndexFunc(l, func(g Expose) bool { return featureKey(g) == featureKey(f) })
			if i < 0 {
				all = nil
				break
			}
			all = append(all, l[i])
		}
		if n, ok := narrow(all); ok {
			out = append(out, n)
		}
	}
	return out
}

// narrow is the one feature all of fs accept, false when they disagree
// on its type, property or values.
func narrow(fs []Expose) (Expose, bool) {
	if len(fs) == 0 {
		return Expose{}, false
	}
	out := fs[0]
	for _, f := range fs[1:] {
		if f.Type != out.Type || f.Property != out.Property {
			return out, false
		}
		out.Access &= f.Access
		ok := true
		switch out.Type {
		case "numeric":
			ok = narrowNumeric(&out, f)
		case "enum":
			out.Values = slices.DeleteFunc(slices.Clone(out.Values), func(v any) bool {
				return !slices.ContainsFunc(f.Values, func(w any) bool { return sameJSON(v, w) })
			})
			ok = len(out.Values) > 0
		case "binary":
			ok = sameJSON(out.ValueOn, f.ValueOn) && sameJSON(out.ValueOff, f.ValueOff)
			if !sameJSON(out.ValueToggle, f.ValueToggle) {
				out.ValueToggle = nil
			}
		case "composite":
			out.Features = commonFeatures([][]Expose{out.Features, f.Features})
			ok = len(out.Features) > 0
		default:
			g := f
			g.Access = out.Access
			ok = sameJSON(out, g)
		}
		if !ok {
			return out, false
		}
	}
	if out.Type == "composite" { // older lists give its features the access
		return out, len(out.Features) > 0
	}
	return out, out.Access&(AccessPublished|AccessSet) != 0
}

// narrowNumeric narrows n's range, step, unit and presets to f's.
func narrowNumeric(n *Expose, f Expose) bool {
	if f.ValueMin != nil && (n.ValueMin == nil || *f.ValueMin > *n.ValueMin) {
		n.ValueMin = f.ValueMin
	}
	if f.ValueMax != nil && (n.ValueMax == nil || *f.ValueMax < *n.ValueMax) {
		n.ValueMax = f.ValueMax
	}
	if !sameJSON(n.ValueStep, f.ValueStep) {
		n.ValueStep = nil
	}
	if n.Unit != f.Unit {
		n.Unit = ""
	}
	n.Presets = slices.DeleteFunc(slices.Clone(n.Presets), func(p model.Preset) bool {
		return !slices.ContainsFunc(f.Presets, func(q model.Preset) bool { return sameJSON(p, q) })
	})
	return n.ValueMin == nil || n.ValueMax == nil || *n.ValueMin <= *n.ValueMax
}
