package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// SSE budgets: buffers between the engine/catalog and one stream (a slow
// browser loses events, it never blocks ingestion), the keep-alive period,
// and how many catalog changes are remembered between two notices.
const (
	sseEngineBuffer  = 64
	sseDeviceBuffer  = 256
	sseKeepAlive     = 25 * time.Second
	sseTick          = time.Second
	sseMaxCatPending = 1024
)

// stream is one /events connection: its scope, caches and counters.
type stream struct {
	s       *server
	ctx     context.Context
	w       http.ResponseWriter
	rc      *http.ResponseController
	visible map[string]bool // device catalog ids in scope
	stale   bool
	catIDs  map[string]bool // catalog changes since the last notice
	dropped atomic.Int64
	// Without a device catalog in Options, live values are polled through
	// the engine once per tick: last is what the browser was last told.
	poll bool
	last map[string]string
	// Deploys raise no engine event: pages that list rules watch the
	// newest deploy run instead (one indexed query per tick).
	deploys    bool
	lastDeploy string
}

// events serves server-sent events: firings and rule changes from the
// engine, live device values from the catalog, each filtered by the
// session's scope. The stream ends with the request.
func (s *server) events(w http.ResponseWriter, r *http.Request, ss *session) {
	st := &stream{s: s, ctx: ss.ctx(r), w: w, rc: http.NewResponseController(w),
		catIDs: map[string]bool{}}
	engCh, cancelEng := s.e.Events(sseEngineBuffer)
	defer cancelEng()
	devCh, cancelDev := st.watchDevices(r.URL.Query().Get("devices") == "1")
	defer cancelDev()
	if r.URL.Query().Get("deploys") == "1" {
		st.deploys = true
		_, st.lastDeploy = st.newestDeploy()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n\n"); err != nil || st.rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(sseTick)
	defer tick.Stop()
	lastWrite := time.Now()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-engCh:
			if !ok {
				return
			}
			err = st.engineEvent(ev)
		case c := <-devCh:
			err = st.deviceChange(c)
		case now := <-tick.C:
			err = st.tick()
			if err == nil && st.poll {
				err = st.pollLive(true)
			}
			if err == nil && st.deploys {
				err = st.checkDeploys()
			}
			if err == nil && now.Sub(lastWrite) >= sseKeepAlive {
				_, err = fmt.Fprint(w, ": keep-alive\n\n")
				lastWrite = now
			}
		}
		if err == nil {
			err = st.rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// bounded holds a stream slot while h serves: open streams are bounded per
// principal and in all, shared with GET /mcp (limits.max_streams_per_principal,
// limits.max_streams); beyond, 429 or 503 with the reason.
func (s *server) bounded(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, ss *session) {
		release, ok := s.o.Guard.OpenStream(w, r, ss.principal.Name)
		if !ok {
			return
		}
		defer release()
		h(w, r, ss)
	}
}

// watchDevices subscribes the stream to live device changes when the page
// shows devices: pushed by the device catalog when the UI has one, else
// polled through the engine on every tick.
func (st *stream) watchDevices(want bool) (<-chan devices.Change, func()) {
	ch := make(chan devices.Change, sseDeviceBuffer)
	switch {
	case !want:
		return ch, func() {}
	case st.s.o.Devices == nil:
		st.poll, st.last = true, map[string]string{}
		_ = st.pollLive(false) // the baseline: what the page was rendered with
		return ch, func() {}
	}
	cancel := st.s.o.Devices.Subscribe(func(c devices.Change) {
		select {
		case ch <- c:
		default:
			st.dropped.Add(1)
		}
	})
	st.refreshVisible()
	return ch, cancel
}

func (st *stream) send(event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", event, b)
	return err
}

// firingMsg is a firing as the pages insert it.
type firingMsg struct {
	Rule   string `json:"rule"`
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Text   string `json:"text"`
	Class  string `json:"class"`
	OK     bool   `json:"ok"`
	When   string `json:"when"`
	Time   string `json:"time"`
}

type ruleMsg struct {
	Rule   string `json:"rule"`
	Status string `json:"status"`
	Class  string `json:"class"`
}

// engineEvent relays an engine event the session's principal may see,
// judged as it is delivered (the rule's owner and program may have changed
// since the stream began; nothing is cached).
func (st *stream) engineEvent(ev engine.Event) error {
	if !st.s.e.EventVisible(st.ctx, ev) {
		return nil
	}
	switch ev.Type {
	case "firing":
		return st.send("firing", firingMsg{Rule: ev.Rule, RunID: ev.RunID, Status: ev.Status, Text: statusText(ev.Status),
			Class: statusClass(ev.Status, ev.OK), OK: ev.OK, When: st.s.when(ev.Time), Time: ev.Time.UTC().Format(time.RFC3339)})
	case "rule":
		return st.send("rule", ruleMsg{Rule: ev.Rule, Status: ev.Status, Class: statusClass(ev.Status, true)})
	}
	return nil
}

type liveMsg struct {
	ID        string `json:"id"`
	Value     string `json:"value,omitempty"`
	Available *bool  `json:"available,omitempty"`
	When      string `json:"when"`
}

func (st *stream) deviceChange(c devices.Change) error {
	if c.Kind == devices.ChangeCatalog {
		st.stale = true
		if len(st.catIDs) < sseMaxCatPending {
			st.catIDs[c.ID] = true
		}
		return nil
	}
	if st.stale {
		st.refreshVisible()
	}
	if !st.visible[c.ID] {
		return nil
	}
	switch c.Kind {
	case devices.ChangeState, devices.ChangeEvent:
		return st.send("live", liveMsg{ID: c.ID, Value: compactJSON(c.Value), When: st.s.when(c.Time)})
	case devices.ChangeAvailability:
		b, ok := c.Value.(bool)
		if !ok {
			return nil
		}
		return st.send("live", liveMsg{ID: c.ID, Available: &b, When: st.s.when(c.Time)})
	}
	return nil
}

// tick sends one coalesced "catalog changed" notice when a change touched
// an entry in scope (before or after the change).
func (st *stream) tick() error {
	if len(st.catIDs) == 0 {
		return nil
	}
	old := st.visible
	st.refreshVisible()
	hit := false
	for id := range st.catIDs {
		if old[id] || st.visible[id] {
			hit = true
			break
		}
	}
	clear(st.catIDs)
	if !hit {
		return nil
	}
	return st.send("catalog", map[string]any{"dropped": st.dropped.Load()})
}

func (st *stream) refreshVisible() {
	st.stale = false
	entries, err := st.s.visibleEntries(st.ctx)
	if err != nil {
		return
	}
	st.visible = make(map[string]bool, len(entries))
	for _, en := range entries {
		st.visible[en.ID] = true
	}
}

// pollLive reads the live values of every visible state, event and
// device through the engine and, when send is set, tells the browser
// about those that changed since the last poll.
func (st *stream) pollLive(send bool) error {
	entries, err := st.s.visibleEntries(st.ctx)
	if err != nil {
		return nil // try again next tick
	}
	for _, en := range entries {
		if en.Kind != pilotage.KindState && en.Kind != pilotage.KindEvent && en.Kind != pilotage.KindDevice {
			continue
		}
		l, ok := st.s.live(st.ctx, en.ID)
		if !ok {
			continue
		}
		var key string
		var msg liveMsg
		if en.Kind == pilotage.KindDevice {
			if l.Available == nil {
				continue
			}
			key = strconv.FormatBool(*l.Available)
			msg = liveMsg{ID: en.ID, Available: l.Available, When: st.s.when(l.LastSeen)}
		} else {
			if l.Value == nil {
				continue
			}
			key = compactJSON(l.Value)
			msg = liveMsg{ID: en.ID, Value: key, When: st.s.when(l.LastSeen)}
		}
		prev, seen := st.last[en.ID]
		st.last[en.ID] = key
		if send && (!seen || prev != key) {
			if err := st.send("live", msg); err != nil {
				return err
			}
		}
	}
	return nil
}

func (st *stream) newestDeploy() (storage.Run, string) {
	runs, err := st.s.e.ListRuns(st.ctx, storage.RunFilter{Kind: storage.KindDeploy, Limit: 1})
	if err != nil || len(runs) == 0 {
		return storage.Run{}, ""
	}
	return runs[0], runs[0].ID
}

type deployMsg struct {
	Rule string `json:"rule"`
	Ref  string `json:"ref"`
	OK   bool   `json:"ok"`
}

// checkDeploys tells the page about an install (or a refused one) since
// the stream began or the last notice.
func (st *stream) checkDeploys() error {
	run, id := st.newestDeploy()
	if id == "" || id == st.lastDeploy {
		return nil
	}
	st.lastDeploy = id
	return st.send("deploy", deployMsg{Rule: refRule(run.Ref), Ref: run.Ref, OK: run.OK})
}
