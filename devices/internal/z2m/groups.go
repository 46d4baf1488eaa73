package z2m

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// Zigbee2MQTT's bridge/groups: its retained list of groups, each an id, a
// friendly name and members (device and endpoint). A command to
// <base>/<group>/set is sent by Zigbee2MQTT to every member at once. The
// list is untrusted like the device list: its size and counts are bounded
// before any group is built, and a malformed list is refused whole, with
// where it is wrong, keeping the previous one.

// Group is one Zigbee2MQTT group as the list names it.
type Group struct {
	ID           int64
	FriendlyName string
	Description  string
	Members      []string // the members' IEEE addresses, each once, in list order
	raw          json.RawMessage
}

// Bounds of one bridge/groups list. A Zigbee group id is 16 bits; real
// houses have tens of groups of tens of members. The members of all
// groups together are bounded as the devices of a list are, so that the
// work of building the groups (each member's definition read once per
// group) stays within that of a device list.
const (
	MaxGroups       = 1024
	MaxGroupMembers = MaxDevices
	maxGroupID      = 0xFFFF
)

// wireGroup is a group as the list holds it.
type wireGroup struct {
	ID           *int64  `json:"id"`
	FriendlyName *string `json:"friendly_name"`
	Description  string  `json:"description"`
	Members      []struct {
		IEEE string `json:"ieee_address"`
	} `json:"members"`
}

// GroupsRefusal is why a group list was refused, and where.
type GroupsRefusal struct{ Where, Why string }

func (r *GroupsRefusal) Error() string { return r.Where + ": " + r.Why }

// ParseGroups reads a bridge/groups payload: the groups, or a refusal
// saying where the payload is wrong or over its bounds.
func ParseGroups(payload []byte) ([]Group, *GroupsRefusal) {
	var raws []json.RawMessage
	if err := json.Unmarshal(payload, &raws); err != nil {
		return nil, &GroupsRefusal{"bridge/groups", "not a JSON array of groups: " + err.Error()}
	}
	if len(raws) > MaxGroups {
		return nil, &GroupsRefusal{"bridge/groups", fmt.Sprintf("lists %d groups, more than the %d a network is taken to have", len(raws), MaxGroups)}
	}
	out := make([]Group, 0, len(raws))
	ids, names := make(map[int64]bool, len(raws)), make(map[string]bool, len(raws))
	members := 0
	for i, r := range raws {
		g, err := parseGroup(r)
		where := fmt.Sprintf("bridge/groups[%d]", i)
		switch {
		case err != nil:
			return nil, &GroupsRefusal{where, err.Error()}
		case ids[g.ID]:
			return nil, &GroupsRefusal{where + ".id", fmt.Sprintf("group id %d is listed twice", g.ID)}
		case names[g.FriendlyName]:
			return nil, &GroupsRefusal{where + ".friendly_name", fmt.Sprintf("%q is listed twice", g.FriendlyName)}
		}
		if members += len(g.Members); members > MaxGroupMembers {
			return nil, &GroupsRefusal{where + ".members", fmt.Sprintf("the groups hold more than %d members together", MaxGroupMembers)}
		}
		ids[g.ID], names[g.FriendlyName] = true, true
		out = append(out, g)
	}
	return out, nil
}

// parseGroup reads one group; its error names the field at fault.
func parseGroup(r json.RawMessage) (Group, error) {
	var w wireGroup
	if err := json.Unmarshal(r, &w); err != nil {
		return Group{}, fmt.Errorf("not a group: %w", err)
	}
	switch {
	case w.ID == nil:
		return Group{}, fmt.Errorf("id: missing")
	case *w.ID < 0 || *w.ID > maxGroupID:
		return Group{}, fmt.Errorf("id: %d is not a Zigbee group id (0–%d)", *w.ID, maxGroupID)
	case w.FriendlyName == nil || *w.FriendlyName == "":
		return Group{}, fmt.Errorf("friendly_name: missing or empty")
	case strings.ContainsAny(*w.FriendlyName, "+#\x00"):
		return Group{}, fmt.Errorf("friendly_name: %q holds an MQTT wildcard or NUL: no topic can name it", *w.FriendlyName)
	case len(w.Members) > MaxGroupMembers:
		return Group{}, fmt.Errorf("members: %d, more than %d", len(w.Members), MaxGroupMembers)
	}
	g := Group{ID: *w.ID, FriendlyName: *w.FriendlyName, Description: w.Description, raw: r}
	seen := make(map[string]bool, len(w.Members))
	for j, m := range w.Members {
		if m.IEEE == "" {
			return Group{}, fmt.Errorf("members[%d].ieee_address: missing or empty", j)
		}
		if !seen[m.IEEE] { // one device on two endpoints is one member here
			seen[m.IEEE] = true
			g.Members = append(g.Members, m.IEEE)
		}
	}
	return g, nil
}

// HandleGroups replaces the group list; a list refused (malformed, or over
// its bounds) keeps the old, and is logged saying where it is wrong.
// changed is false too when the list is the one held.
func (z *Source) HandleGroups(log *slog.Logger, payload []byte) (changed, refused bool) {
	if z.GroupsListed && bytes.Equal(payload, z.groupsRaw) {
		return false, false
	}
	gs, bad := ParseGroups(payload)
	if bad != nil {
		log.Warn("zigbee2mqtt bridge/groups refused; the catalog keeps the previous group list",
			"topic", z.base+"/bridge/groups", "where", bad.Where, "why", bad.Why)
		return false, true
	}
	z.groups, z.groupsRaw, z.GroupsListed = gs, append([]byte(nil), payload...), true
	for _, g := range gs {
		if len(g.Members) == 0 {
			log.Info("zigbee2mqtt group not in the catalog: it has no members", "group", g.FriendlyName, "id", g.ID)
		}
	}
	return true, false
}
