package web

import (
	"net/url"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// findData is the Devices page: the filters and the devices that match,
// grouped by area.
type findData struct {
	Q, Area, Type, Kind string
	Areas, Types        []string // choices, from the visible devices
	Groups              []areaGroup
	Shown, Total        int
	// More: devices that match beyond maxListed, not listed (a house
	// flooded by discovery must not make a page of tens of megabytes).
	More     int
	Filtered bool
	Gaps     bool // only devices not fully modelled
}

// maxListed bounds the devices one Devices page lists.
const maxListed = 500

type areaGroup struct {
	Area     string // "" = no area
	Channels bool   // the notification channels, after every area
	Devices  []*deviceView
}

// noArea is the area filter's value for devices without one.
const noArea = "-"

// areaParam is the area filter as devices carry it (lower case).
func areaParam(v string) string {
	if v == noArea {
		return v
	}
	return strings.ToLower(v)
}

// findDevices filters devices by text (every word, over the device's and
// its entries' ids, names, descriptions and tags), area, type and entry
// kind, and groups them by area (named areas first, by name).
func findDevices(list []*deviceView, q url.Values) findData {
	f := findData{Q: strings.TrimSpace(q.Get("q")), Area: areaParam(q.Get("area")), Type: q.Get("type"), Kind: q.Get("kind"), Total: len(list)}
	f.Gaps = q.Get(gapsParam) != ""
	f.Filtered = f.Q != "" || f.Area != "" || f.Type != "" || f.Kind != "" || f.Gaps
	areas, types := map[string]bool{}, map[string]bool{}
	words := strings.Fields(strings.ToLower(f.Q))
	groups := map[string]*areaGroup{}
	for _, dv := range list {
		if dv.Area != "" {
			areas[dv.Area] = true
		}
		if dv.Type != "" {
			types[dv.Type] = true
		}
		switch {
		case f.Area == noArea && dv.Area != "", f.Area != "" && f.Area != noArea && dv.Area != f.Area,
			f.Type != "" && dv.Type != f.Type, f.Gaps && dv.Fidelity == fidelityFull:
			continue
		}
		m := dv.match(words, pilotage.Kind(f.Kind))
		if m == nil {
			continue
		}
		key := m.Area
		if m.Channel {
			key = "\x00channels"
		}
		if f.Shown == maxListed {
			f.More++
			continue
		}
		g := groups[key]
		if g == nil {
			g = &areaGroup{Area: m.Area, Channels: m.Channel}
			groups[key] = g
		}
		g.Devices = append(g.Devices, m)
		f.Shown++
	}
	for a := range groups {
		f.Groups = append(f.Groups, *groups[a])
	}
	sort.Slice(f.Groups, func(i, j int) bool {
		a, b := f.Groups[i].Area, f.Groups[j].Area
		if ci, cj := f.Groups[i].Channels, f.Groups[j].Channels; ci != cj {
			return cj
		}
		if (a == "") != (b == "") {
			return b == ""
		}
		return a < b
	})
	f.Areas, f.Types = sortedSet(areas), sortedSet(types)
	return f
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func entryText(en *pilotage.Entry) string {
	return strings.ToLower(en.ID + "\x00" + en.Name + "\x00" + en.Description + "\x00" + strings.Join(en.Tags, "\x00"))
}

func hasWords(text string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// match returns the device as the filters show it: all of it when the
// device itself matches the words, else only its entries that do (words
// may fall on the device and the entry: "hall occupancy"), and only
// entries of kind when one is asked for; nil when nothing is left.
func (dv *deviceView) match(words []string, kind pilotage.Kind) *deviceView {
	if len(words) == 0 && kind == "" {
		return dv
	}
	devText := entryText(dv.Entry)
	whole := hasWords(devText, words)
	out := *dv
	out.States, out.Events, out.Actions = nil, nil, nil
	keep := func(en *pilotage.Entry) bool {
		return (kind == "" || en.Kind == kind) && (whole || hasWords(devText+"\x00"+entryText(en), words))
	}
	for _, r := range dv.States {
		if keep(r.Entry) {
			out.States = append(out.States, r)
		}
	}
	for _, r := range dv.Events {
		if keep(r.Entry) {
			out.Events = append(out.Events, r)
		}
	}
	for _, a := range dv.Actions {
		if keep(a.Entry) {
			out.Actions = append(out.Actions, a)
		}
	}
	if len(out.States)+len(out.Events)+len(out.Actions) == 0 && (kind != "" || !whole) {
		return nil
	}
	return &out
}
