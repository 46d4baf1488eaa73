package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/web/internal/healthnote"
)

// Health is what the UI says about the house's connections: the facts
// /healthz reports, read by Options.Health on every page and every poll.
type Health struct {
	// Broker is the MQTT broker's URL, without credentials; Embedded is
	// set for the broker Pilothouse runs itself.
	Broker   string
	Embedded bool
	// BrokerOK is false while the broker is not connected or not
	// answering; BrokerReason says why.
	BrokerOK     bool
	BrokerReason string
	// BrokerLostAt is when the connection to the broker was last lost
	// (zero: never), BrokerAway how long it was away (0 while it is).
	BrokerLostAt time.Time
	BrokerAway   time.Duration
	// StorageOK is false while storage cannot write: StorageError is the
	// latest failure, StorageSince the first of the streak.
	StorageOK    bool
	StorageError string
	StorageSince time.Time
	// Z2MBase and HAPrefix are the topics discovery listens on.
	Z2MBase, HAPrefix string
	// Devices is how many devices the house knows, whatever the
	// viewer's scope.
	Devices int
}

// RedactURL is a broker URL without its credentials (user and password).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	u.User = nil
	return u.String()
}

// health reads the house's state; without Options.Health (a UI without a
// house around it, in tests) every part counts as fine.
func (s *server) health() Health {
	if s.o.Health == nil {
		return Health{BrokerOK: true, StorageOK: true}
	}
	return s.o.Health()
}

// seesHouse reports whether a session may see where the house's broker is
// and what it listens on: the owner and principals that may install
// rules, not a read-only guest.
func (ss *session) seesHouse() bool { return ss.principal.Deploy || ss.principal.Admin }

// statusView is the header's status indicator and, when something is
// wrong, the banner under it; /status answers the same as JSON for the
// page's script to repaint both.
type statusView struct {
	OK      bool   `json:"ok"`
	Label   string `json:"label"`             // the indicator's words
	Title   string `json:"title"`             // its tooltip: each part's state
	Problem string `json:"problem,omitempty"` // the banner: what is wrong, what it means
	// Notes counts the /healthz counters that need a look (lost,
	// refused, cut since the start): the header links the health page.
	Notes int `json:"notes,omitempty"`
}

func (s *server) statusView(ss *session) statusView {
	h := s.health()
	broker := "the MQTT broker"
	if ss.seesHouse() && h.Broker != "" {
		broker += " " + h.Broker
		if h.Embedded {
			broker = "the embedded MQTT broker " + h.Broker
		}
	}
	connected := "connected"
	if h.BrokerAway > 0 {
		connected += " (last away " + h.BrokerAway.Round(100*time.Millisecond).String() + " from " + s.when(h.BrokerLostAt) + ")"
	}
	v := statusView{OK: true, Label: "connected", Title: "Broker: " + connected + " · storage: writing"}
	if ss.seesHouse() && h.Broker != "" {
		v.Title = "Broker " + h.Broker + ": " + connected + " · storage: writing"
	}
	switch {
	case !h.BrokerOK:
		label, lead, why := brokerTrouble(broker, h.BrokerReason)
		then := ". Device values shown here may be out of date, and rules cannot switch anything until it is back."
		if label == brokerRefuses {
			then = "." // connected: only what those subscriptions bring is missing, and why says so
		}
		v = statusView{Label: label, Title: "Broker: " + h.BrokerReason, Problem: lead + ": " + why + then}
	case !h.StorageOK:
		since := ""
		if !h.StorageSince.IsZero() {
			since = " since " + s.when(h.StorageSince)
		}
		v = statusView{Label: "storage failing", Title: "Storage: " + h.StorageError,
			Problem: "Storage cannot write" + since + " (" + h.StorageError + "). Installing rules fails and runs are not recorded until it recovers."}
	}
	v.Notes = healthnote.Troubles(s.counters())
	return v
}

// brokerRefuses labels a broker that refuses (or leaves unanswered) some
// of Pilothouse's subscriptions while it is connected.
const brokerRefuses = "broker refuses subscriptions"

// brokerTrouble words a broker's health reason ("mqtt disconnected: …",
// "mqtt broker not answering: …") for the indicator and the banner.
func brokerTrouble(broker, reason string) (label, lead, why string) {
	if why, ok := strings.CutPrefix(reason, "mqtt broker not answering: "); ok {
		return "broker not answering", strings.ToUpper(broker[:1]) + broker[1:] + " is not answering", why
	}
	if why, ok := strings.CutPrefix(reason, "mqtt broker has not accepted "); ok {
		return brokerRefuses, strings.ToUpper(broker[:1]) + broker[1:] + " has not accepted Pilothouse's subscriptions", why
	}
	if why, ok := strings.CutPrefix(reason, "mqtt session taken over: "); ok {
		return "broker session taken over", "Another client keeps taking Pilothouse's session on " + broker, why
	}
	why, _ = strings.CutPrefix(reason, "mqtt disconnected: ")
	if why == "" {
		why = "not connected"
	}
	return "broker unreachable", "No connection to " + broker, why
}

// status answers the page's poll: the indicator and banner as JSON.
func (s *server) status(w http.ResponseWriter, _ *http.Request, ss *session) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(s.statusView(ss))
}
