package mqtt

import (
	"errors"
	"io"
	"syscall"
	"time"
)

// Two processes with one client id take the session from each other: the
// broker closes the older connection as the newer one connects (MQTT
// 3.1.1 §3.1.4), and each reconnects. MQTT 3.1.1 gives no reason, so a
// takeover is inferred: the broker closed a connection less than
// takeoverLived old, the very next attempt got a new one, and the broker
// still had the session (a restarted broker without persistence has
// not). After each takeover in a row the next reconnect waits longer
// (takeoverBase, doubling up to takeoverMax), so two such processes hand
// the session over now and then instead of flapping. Health reports a
// streak of two or more for takeoverForget after the last.
const (
	takeoverBase   = 2 * time.Second
	takeoverMax    = time.Minute
	takeoverLived  = takeoverMax + 5*time.Second
	takeoverForget = 5 * time.Minute
)

// Link is how the connection to the broker has held up since the client
// started (/healthz).
type Link struct {
	ClientID string `json:"client_id"`
	// Persistent: the broker keeps the session while the client is away
	// (subscriptions, QoS 1 messages queued); SessionResumed: it still had
	// it at the last connect.
	Persistent     bool `json:"persistent_session"`
	SessionResumed bool `json:"session_resumed"`
	// Connects counts connections made; Outages those lost.
	Connects uint64 `json:"connects"`
	Outages  uint64 `json:"outages"`
	// LastOutage is the last loss of the connection (nil: none yet).
	LastOutage *Outage `json:"last_outage,omitempty"`
	// SilentDrops counts connections dropped because the broker sent
	// nothing, not even an answer to a ping, for the silence limit (8 s):
	// frozen or unreachable.
	SilentDrops uint64 `json:"silent_drops"`
	// Takeovers counts connections the broker closed and at once accepted
	// again: another client with the same client id; TakeoversInARow is
	// the current streak (reconnects slow down while it lasts).
	Takeovers       uint64    `json:"takeovers"`
	TakeoversInARow int       `json:"takeovers_in_a_row"`
	LastTakeover    time.Time `json:"last_takeover,omitzero"`
	// Reconnects counts connections made after the first one.
	Reconnects uint64 `json:"reconnects"`
	// LastConnectError is the last connection attempt that failed (nil:
	// none yet), its broker URL's credentials removed.
	LastConnectError *ConnectError `json:"last_connect_error,omitempty"`
}

// ConnectError is a failed connection attempt.
type ConnectError struct {
	Error string    `json:"error"`
	At    time.Time `json:"at"`
	// Failed counts the attempts that failed since the client started.
	Failed uint64 `json:"failed_attempts"`
}

// Outage is one loss of the connection.
type Outage struct {
	Start time.Time `json:"start"`
	// Seconds it lasted, until the broker accepted a new connection (so
	// far, while Ongoing).
	Seconds float64 `json:"seconds"`
	Ongoing bool    `json:"ongoing"`
	Reason  string  `json:"reason"`
}

// linkState is what Link reports, kept under Client.mu.
type linkState struct {
	persistent, resumed        bool
	connects, outages, silent  uint64
	connectedAt                time.Time
	lostAt                     time.Time // start of the last outage (zero: none)
	lostWhy                    string
	lostSilent, closedByBroker bool
	lived                      time.Duration // how long the lost connection had been up
	away                       time.Duration // the last outage's length; 0 while it lasts
	attempts                   int           // connection attempts since the loss
	takeovers                  uint64
	streak                     int
	lastTakeover               time.Time
	failed                     uint64 // connection attempts that failed
	failedWhy                  string
	failedAt                   time.Time
}

// lost records the loss of the connection at now and returns how long to
// wait before reconnecting: firstRetry (a broker that closed the
// connection is rarely back at once; and mochi, asked by two clients with
// one id at the same instant, keeps both), longer in a takeover streak.
func (l *linkState) lost(err error, now time.Time) time.Duration {
	l.outages++
	l.lostAt, l.away, l.attempts = now, 0, 0
	l.lostWhy, l.lostSilent, l.closedByBroker = "unknown reason", false, false
	if err != nil {
		l.lostWhy = err.Error()
		var se *silenceError
		l.lostSilent = errors.As(err, &se)
		l.closedByBroker = errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
	}
	if l.lostSilent {
		l.silent++
	}
	l.lived = now.Sub(l.connectedAt)
	if l.streak == 0 {
		return firstRetry
	}
	return min(takeoverBase<<(l.streak-1), takeoverMax)
}

// connected records a connection accepted at now and reports whether the
// outage it ends was a takeover (see takeoverLived).
func (l *linkState) connected(now time.Time, sessionPresent bool) (takeover bool) {
	l.connects++
	l.connectedAt, l.resumed = now, sessionPresent
	if l.lostAt.IsZero() || l.away > 0 {
		return false // the first connection
	}
	l.away = max(now.Sub(l.lostAt), time.Nanosecond)
	if !l.closedByBroker || l.attempts > 1 || !sessionPresent || l.lived >= takeoverLived {
		l.streak = 0
		return false
	}
	l.takeovers++
	l.streak++
	l.lastTakeover = now
	return true
}

// takenOver reports whether the session is being taken over again and
// again: a streak of two or more, the last within takeoverForget, unless
// the connection held now has lived takeoverLived, longer than a twin
// backing off waits, so the twin is gone (a stopped second server kept
// /healthz at 503 for five minutes before).
func (l *linkState) takenOver(now time.Time, connected bool) bool {
	if connected && now.Sub(l.connectedAt) >= takeoverLived {
		return false
	}
	return l.streak >= 2 && now.Sub(l.lastTakeover) < takeoverForget
}

// Link reports how the connection has held up.
func (c *Client) Link() Link {
	c.mu.Lock()
	l := c.link
	c.mu.Unlock()
	out := Link{ClientID: c.opts.ClientID, Persistent: l.persistent, SessionResumed: l.resumed, Connects: l.connects,
		Outages: l.outages, SilentDrops: l.silent, Takeovers: l.takeovers, TakeoversInARow: l.streak, LastTakeover: l.lastTakeover}
	if l.connects > 1 {
		out.Reconnects = l.connects - 1
	}
	if l.failed > 0 {
		out.LastConnectError = &ConnectError{Error: l.failedWhy, At: l.failedAt, Failed: l.failed}
	}
	if !l.lostAt.IsZero() {
		o := &Outage{Start: l.lostAt, Seconds: l.away.Seconds(), Reason: l.lostWhy}
		if l.away == 0 {
			o.Ongoing, o.Seconds = true, time.Since(l.lostAt).Seconds()
		}
		out.LastOutage = o
	}
	return out
}
