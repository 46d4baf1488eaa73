package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// SSE budgets: buffers between the engine and one stream (a slow browser
// loses events, it never blocks ingestion) and the keep-alive period.
const (
	sseEngineBuffer = 64
	sseDeviceBuffer = 256
	sseKeepAlive    = 25 * time.Second
	sseTick         = time.Second
)

// stream is one /events connection and what it watches.
type stream struct {
	s    *server
	ctx  context.Context
	w    http.ResponseWriter
	rc   *http.ResponseController
	live *engine.LiveWatch // nil: the page shows no devices, or there are none
	// Deploys raise no engine event: pages that list rules watch the
	// newest deploy run instead (one indexed query per tick).
	deploys    bool
	lastDeploy string
}

// events serves server-sent events: firings, rule changes and live
// device values from the engine, each judged in the session's scope by
// the engine. The stream ends with the request.
func (s *server) events(w http.ResponseWriter, r *http.Request, ss *session) {
	st := &stream{s: s, ctx: ss.ctx(r), w: w, rc: http.NewResponseController(w)}
	engCh, cancelEng := s.e.Events(sseEngineBuffer)
	defer cancelEng()
	logCh, cancelLog := st.watchLogbook(r)
	defer cancelLog()
	var devCh <-chan engine.LiveChange // nil: never ready
	if r.URL.Query().Get("devices") == "1" {
		if lw, ok := s.e.WatchLive(st.ctx, sseDeviceBuffer); ok {
			st.live, devCh = lw, lw.C
			defer lw.Close()
		}
	}
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
		case en := <-logCh:
			err = st.logEntry(en)
		case now := <-tick.C:
			err = st.tick()
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
	// Principal is whom it ran as (the Runs list's By column).
	Principal string `json:"principal,omitempty"`
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
		return st.send("firing", firingMsg{Rule: ev.Rule, Principal: ev.Principal, RunID: ev.RunID, Status: ev.Status, Text: statusText(ev.Status),
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

// deviceChange relays a live value the session's principal may see.
func (st *stream) deviceChange(c engine.LiveChange) error {
	if !st.live.Pass(c) {
		return nil
	}
	switch c.Kind {
	case engine.LiveState, engine.LiveEvent:
		return st.send("live", liveMsg{ID: c.ID, Value: liveShown(c.Value), When: st.s.when(c.Time)})
	case engine.LiveAvailability:
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
	if st.live == nil || !st.live.CatalogTouched() {
		return nil
	}
	return st.send("catalog", map[string]any{"dropped": st.live.Dropped()})
}

func (st *stream) newestDeploy() (engine.Run, string) {
	runs, err := st.s.e.ListRuns(st.ctx, engine.RunFilter{Kind: engine.KindDeploy, Limit: 1})
	if err != nil || len(runs) == 0 {
		return engine.Run{}, ""
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
