package web

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/web/internal/healthnote"
)

// deviceView is one device with its states, events and actions.
type deviceView struct {
	Entry     *pilotage.Entry
	Type      string
	Area      string
	Available *bool
	LastSeen  time.Time
	States    []liveRow
	Events    []liveRow
	Actions   []actionRow
	// Fidelity is how fully the device is modelled ("" fully, partial,
	// unmodelled), Gaps what is missing and why (markFidelity).
	Fidelity string
	Gaps     []string
	// Channel: a notification channel (notify.phone under "notify"),
	// not a device: it has no availability to show.
	Channel bool
}

// Offline reports whether the device says it is offline.
func (dv *deviceView) Offline() bool { return dv.Available != nil && !*dv.Available }

type liveRow struct {
	Entry *pilotage.Entry
	Short string // the id without its device prefix, inside the device's card
	Value string
	Unit  string
	Dev   string // its device, whose going offline makes the value stale
}

type actionRow struct {
	Entry *pilotage.Entry
	Args  string // settable argument names
}

// visibleEntries lists the caller's whole scoped catalog, page by page.
func (s *server) visibleEntries(ctx context.Context) ([]*pilotage.Entry, error) {
	var out []*pilotage.Entry
	req := engine.LookupRequest{Verb: "list", Limit: engine.MaxListLimit}
	for {
		res, err := s.e.Lookup(ctx, req)
		if err != nil {
			return nil, err
		}
		lr := res.(*engine.ListResponse)
		out = append(out, lr.Items...)
		if lr.NextCursor == "" {
			return out, nil
		}
		req.Cursor = lr.NextCursor
	}
}

func (s *server) devicesPage(w http.ResponseWriter, r *http.Request, ss *session) {
	ctx := ss.ctx(r)
	entries, err := s.visibleEntries(ctx)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the catalog failed.", err)
		return
	}
	list := s.groupDevices(ctx, entries)
	d := devicesData{findData: findDevices(list, r.URL.Query()), Coverage: coverageOf(list, !ss.seesHouse())}
	cs := s.counters()
	d.Coverage.Refused, d.Notes = healthnote.Value(cs, "devices.refused.oversized_messages"), healthnote.Troubles(cs)
	if !hasDevice(list) {
		d.Empty = s.noDevices(ss)
	}
	s.render(w, r, ss, "devices", page{Title: "Devices", Nav: "devices", Live: "devices", Data: d})
}

// devicesData is the Devices page: the found devices and, when none is
// visible at all, why.
type devicesData struct {
	findData
	Empty    *noDevices
	Coverage coverageView
	Notes    int // /healthz counters that need a look (the health page)
}

// noDevices explains an empty Devices page: devices hidden by the login's
// scope, or none discovered, with where Pilothouse listens for them.
type noDevices struct {
	InHouse  int  // devices the house knows, in any scope
	Sees     bool // the login may see the broker and topics
	Health   Health
	Z2MTopic string // where the Zigbee2MQTT device list comes from
	HATopic  string // the Home Assistant discovery filter
}

func (s *server) noDevices(ss *session) *noDevices {
	h := s.health()
	n := &noDevices{InHouse: h.Devices, Sees: ss.seesHouse(), Health: h}
	if h.Z2MBase != "" {
		n.Z2MTopic = h.Z2MBase + "/bridge/devices"
	}
	if h.HAPrefix != "" {
		n.HATopic = h.HAPrefix + "/#"
	}
	return n
}

// hasDevice reports whether a device (not only a notification channel)
// is among the views.
func hasDevice(list []*deviceView) bool {
	for _, dv := range list {
		if dv.Entry.Kind == pilotage.KindDevice {
			return true
		}
	}
	return false
}

// groupDevices attaches every state, event and action to its device;
// entries of no visible device (e.g. notification channels) are grouped
// by the first part of their id ("notify.phone" under "notify"), after
// the devices.
func (s *server) groupDevices(ctx context.Context, entries []*pilotage.Entry) []*deviceView {
	byID := map[string]*deviceView{}
	var list, others []*deviceView
	for _, en := range entries {
		if en.Kind == pilotage.KindDevice {
			// Areas match case-insensitively in scopes ("Garden" from a
			// Home Assistant device is the garden of a Zigbee2MQTT one):
			// one group each.
			dv := &deviceView{Entry: en, Type: tagValue(en.Tags, "type:"), Area: strings.ToLower(tagValue(en.Tags, "area:"))}
			if l, ok := s.e.Live(ctx, en.ID); ok {
				dv.Available, dv.LastSeen = l.Available, l.LastSeen
			}
			byID[en.ID] = dv
			list = append(list, dv)
		}
	}
	for _, en := range entries {
		if en.Kind == pilotage.KindDevice || en.Kind == pilotage.KindAutomation {
			continue
		}
		dev := tagValue(en.Tags, "device:")
		if dev == "" {
			dev, _, _ = strings.Cut(en.ID, ".")
		}
		dv := byID[dev]
		if dv == nil {
			dv = &deviceView{Entry: &pilotage.Entry{ID: dev, Name: dev}}
			byID[dev] = dv
			others = append(others, dv)
		}
		s.attach(ctx, dv, dev, en)
	}
	for _, dv := range list {
		markFidelity(dv)
	}
	return append(list, others...)
}

// attach adds an entry to its device's view.
func (s *server) attach(ctx context.Context, dv *deviceView, dev string, en *pilotage.Entry) {
	if dv.Entry.Kind != pilotage.KindDevice && slices.Contains(en.Tags, "notify") {
		dv.Channel, dv.Type = true, "notification channel"
	}
	switch en.Kind {
	case pilotage.KindAction:
		dv.Actions = append(dv.Actions, actionRow{Entry: en, Args: schemaProps(en.InputSchema)})
	case pilotage.KindState, pilotage.KindEvent:
		row := liveRow{Entry: en, Short: strings.TrimPrefix(en.ID, dev+"."), Value: "—", Unit: schemaUnit(en.OutputSchema), Dev: dev}
		if l, ok := s.e.Live(ctx, en.ID); ok && l.Value != nil {
			row.Value = liveShown(l.Value)
		}
		if en.Kind == pilotage.KindState {
			dv.States = append(dv.States, row)
		} else {
			dv.Events = append(dv.Events, row)
		}
	}
}

func tagValue(tags []string, prefix string) string {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			return v
		}
	}
	return ""
}

func schemaProps(raw json.RawMessage) string {
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &sch) != nil || len(sch.Properties) == 0 {
		return ""
	}
	keys := make([]string, 0, len(sch.Properties))
	for k := range sch.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func schemaUnit(raw json.RawMessage) string {
	var sch struct {
		Unit  string `json:"x-unit"`
		Unit2 string `json:"unit"`
	}
	if json.Unmarshal(raw, &sch) != nil {
		return ""
	}
	if sch.Unit != "" {
		return sch.Unit
	}
	return sch.Unit2
}
