package mqtt

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// ErrAnonymousListener is returned by StartBroker for a listener beyond
// loopback without broker users: anyone on the network could publish
// device states (and so fire rules) and read every device.
var ErrAnonymousListener = errors.New("mqtt: embedded broker: refusing anonymous clients beyond loopback")

// BrokerUser is one account of the embedded broker.
//
// Exactly one of Password and PasswordHash is set. Password is compared in
// constant time (through its SHA-256, so its length does not leak either);
// PasswordHash is Mosquitto's PBKDF2-SHA512 format "$7$iterations$salt$hash"
// as written by mosquitto_passwd, so the configuration need not hold the
// password itself.
//
// Read and Write are MQTT topic filters. nil allows everything; an empty
// non-nil list allows nothing. A SUBSCRIBE is accepted when its filter
// overlaps a Read filter, and each message is delivered only when its topic
// matches one (as Mosquitto's ACLs do); a PUBLISH must match a Write filter,
// and so must a CONNECT's last will (else the CONNECT is refused). A client
// id's session belongs to the user who made it: another user's CONNECT
// under that id is refused.
type BrokerUser struct {
	Name         string
	Password     string
	PasswordHash string
	Read, Write  []string
}

// WithBrokerUsers makes the broker accept only clients that present one of
// these users' credentials, each limited to its topic filters. The
// server's own Inline client is not a network client and is not checked.
// An empty list leaves the broker anonymous (loopback only).
func WithBrokerUsers(users []BrokerUser) BrokerOption {
	return func(c *brokerConfig) {
		c.users = append([]BrokerUser(nil), users...)
	}
}

// WithUsers makes the broker accept only these username/password pairs,
// each with access to every topic.
func WithUsers(users map[string]string) BrokerOption {
	list := make([]BrokerUser, 0, len(users))
	for u, p := range users {
		list = append(list, BrokerUser{Name: u, Password: p})
	}
	return WithBrokerUsers(list)
}

// CheckPasswordHash reports whether s is a password hash BrokerUser accepts.
func CheckPasswordHash(s string) error {
	_, err := parsePBKDF2(s)
	return err
}

// CheckFilter reports whether f is a valid MQTT topic filter.
func CheckFilter(f string) error {
	if err := validFilter(f); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "mqtt: "))
	}
	return nil
}

// maxPBKDF2Iterations bounds the work one CONNECT may cost.
const maxPBKDF2Iterations = 1_000_000

type pbkdf2Hash struct {
	iter       int
	salt, hash []byte
}

// parsePBKDF2 reads "$7$<iterations>$<base64 salt>$<base64 hash>".
func parsePBKDF2(s string) (*pbkdf2Hash, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 5 || parts[0] != "" || parts[1] != "7" {
		return nil, errors.New(`want a mosquitto_passwd hash "$7$<iterations>$<salt>$<hash>" (PBKDF2-SHA512)`)
	}
	iter, err := strconv.Atoi(parts[2])
	if err != nil || iter < 1 || iter > maxPBKDF2Iterations {
		return nil, fmt.Errorf("hash iterations %q: want 1..%d", parts[2], maxPBKDF2Iterations)
	}
	salt, err1 := base64.StdEncoding.DecodeString(parts[3])
	hash, err2 := base64.StdEncoding.DecodeString(parts[4])
	if err1 != nil || err2 != nil || len(salt) == 0 || len(hash) != sha512.Size {
		return nil, errors.New("hash salt or digest is not valid base64 (a 64-byte PBKDF2-SHA512 digest)")
	}
	return &pbkdf2Hash{iter: iter, salt: salt, hash: hash}, nil
}

// authUser is a BrokerUser ready for checks.
type authUser struct {
	name       string
	plain      [sha256.Size]byte // SHA-256 of Password
	hashed     *pbkdf2Hash
	readAll    bool
	writeAll   bool
	read, writ []string
}

func (u *authUser) passwordOK(pw []byte) bool {
	if u.hashed == nil {
		sum := sha256.Sum256(pw)
		return subtle.ConstantTimeCompare(sum[:], u.plain[:]) == 1
	}
	got, err := pbkdf2.Key(sha512.New, string(pw), u.hashed.salt, u.hashed.iter, sha512.Size)
	return err == nil && subtle.ConstantTimeCompare(got, u.hashed.hash) == 1
}

func (u *authUser) canWrite(topic string) bool {
	if u.writeAll {
		return true
	}
	for _, f := range u.writ {
		if TopicMatch(f, topic) {
			return true
		}
	}
	return false
}

// canRead checks a SUBSCRIBE filter (it must overlap a Read filter) or the
// topic of a delivery (it must match one: a topic is a filter without
// wildcards).
func (u *authUser) canRead(filter string) bool {
	if u.readAll {
		return true
	}
	for _, f := range u.read {
		if filtersOverlap(f, filter) {
			return true
		}
	}
	return false
}

// filtersOverlap reports whether some topic matches both filters.
func filtersOverlap(a, b string) bool {
	if dollar(a) != dollar(b) && (wildFirst(a) || wildFirst(b)) {
		return false // a first-level wildcard never matches a "$" topic
	}
	for {
		al, arest, amore := strings.Cut(a, "/")
		bl, brest, bmore := strings.Cut(b, "/")
		if al == "#" || bl == "#" {
			return true
		}
		if al != "+" && bl != "+" && al != bl {
			return false
		}
		switch {
		case !amore && !bmore:
			return true
		case !amore:
			return brest == "#"
		case !bmore:
			return arest == "#"
		}
		a, b = arest, brest
	}
}

func dollar(f string) bool    { return strings.HasPrefix(f, "$") }
func wildFirst(f string) bool { return f != "" && (f[0] == '+' || f[0] == '#') }

// newAuthUsers checks the users and prepares them.
func newAuthUsers(users []BrokerUser) (map[string]*authUser, error) {
	out := make(map[string]*authUser, len(users))
	for i, u := range users {
		if u.Name == "" {
			return nil, fmt.Errorf("broker user %d: empty name", i)
		}
		if out[u.Name] != nil {
			return nil, fmt.Errorf("broker user %q defined twice", u.Name)
		}
		au := &authUser{name: u.Name, readAll: u.Read == nil, writeAll: u.Write == nil, read: u.Read, writ: u.Write}
		switch {
		case (u.Password == "") == (u.PasswordHash == ""):
			return nil, fmt.Errorf("broker user %q: set exactly one of a password and a password hash", u.Name)
		case u.PasswordHash != "":
			h, err := parsePBKDF2(u.PasswordHash)
			if err != nil {
				return nil, fmt.Errorf("broker user %q: %w", u.Name, err)
			}
			au.hashed = h
		default:
			au.plain = sha256.Sum256([]byte(u.Password))
		}
		for _, f := range append(append([]string(nil), u.Read...), u.Write...) {
			if err := validFilter(f); err != nil {
				return nil, fmt.Errorf("broker user %q: %w", u.Name, err)
			}
		}
		out[u.Name] = au
	}
	return out, nil
}

// authHook authenticates network clients against the broker users and
// applies their topic filters; without users (anonymous, loopback only)
// it allows every client and topic. Either way it checks a client's last
// will at CONNECT: mochi publishes a will without asking the ACL, so a
// will the client could not publish itself is refused there, as Mosquitto
// does. mochi's own auth.Ledger is not used: it compares plaintext
// passwords with ==, and its per-user ACL is a map, so which of two
// overlapping filters decides depends on map order.
type authHook struct {
	mochi.HookBase
	anonymous bool // no broker users: every client and topic is allowed
	users     map[string]*authUser
	sessions  *mochi.Clients // the broker's sessions, connected or not
	dummy     authUser       // compared against for unknown users, so they cost as much
	log       *slog.Logger
	counts    *AuthCounts
	// fails bounds wrong passwords per client address, as the HTTP doors
	// bound wrong tokens (a script tried 2,000 a second).
	fails *ratelimit.Failures
}

// AuthCounts counts what the broker's authentication refused.
type AuthCounts struct {
	RefusedConnects  atomic.Uint64 // bad credentials, or a will the client may not publish
	Throttled        atomic.Uint64 // refused unread: too many wrong passwords from the address
	DeniedPublishes  atomic.Uint64
	DeniedSubscribes atomic.Uint64
}

func (h *authHook) ID() string { return "pilothouse-auth" }

func (h *authHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mochi.OnConnectAuthenticate, mochi.OnACLCheck, mochi.OnSubscribed}, []byte{b})
}

func (h *authHook) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	var u *authUser
	if !h.anonymous {
		if u = h.authenticate(cl, pk); u == nil {
			return false
		}
		if other, ok := h.sessionOwner(cl.ID, u); ok {
			return h.refuse(cl, pk, packets.ErrClientIdentifierNotValid, "client id names a session of another user", "session_user", other)
		}
	}
	if why := willRefusal(pk, u); why != "" {
		return h.refuse(cl, pk, packets.ErrNotAuthorized, why, "will_topic", pk.Connect.WillTopic)
	}
	return true
}

// sessionOwner reports the user of another user's session (connected or
// kept for a client without a clean session) under client id id. Taking
// it over would hand its queued messages to u (mochi resends them without
// asking the ACL) and disconnect its owner.
func (h *authHook) sessionOwner(id string, u *authUser) (string, bool) {
	if h.sessions == nil {
		return "", false
	}
	ex, ok := h.sessions.Get(id)
	if !ok || (!ex.Net.Inline && string(ex.Properties.Username) == u.name) {
		return "", false
	}
	return string(ex.Properties.Username), true
}

// authenticate returns the user whose credentials the CONNECT presents,
// or nil (counted and logged).
func (h *authHook) authenticate(cl *mochi.Client, pk packets.Packet) *authUser {
	name := string(pk.Connect.Username)
	u, ok := h.users[name]
	if !ok {
		u = &h.dummy
	}
	right := u.passwordOK(pk.Connect.Password) && ok
	// Loopback is not throttled: a local script must not lock Zigbee2MQTT
	// on the same host out of the house; the network is.
	if cl.Net.Inline || h.fails == nil || loopbackRemote(cl.Net.Remote) {
		if right {
			return u
		}
	} else if pass, wait := h.fails.Admit(ratelimit.Attempt{Addr: ratelimit.ClientKey(cl.Net.Remote), Presented: true, Right: right, Guessable: true}); pass {
		return u
	} else if wait > 0 {
		if n := h.counts.Throttled.Add(1); n == 1 || n%1000 == 0 {
			h.log.Warn("mqtt client refused: too many wrong passwords from this address", "remote", cl.Net.Remote, "wait", wait.Round(time.Second), "throttled", n)
		}
		return nil
	}
	n := h.counts.RefusedConnects.Add(1)
	reason := "bad username or password"
	if !pk.Connect.UsernameFlag {
		reason = "anonymous clients are not allowed (broker users are configured)"
	}
	if n <= 20 || n%1000 == 0 { // a script's guesses do not flood the log
		h.log.Warn("mqtt client refused", "remote", cl.Net.Remote, "client_id", cl.ID, "username", name, "reason", reason, "refused", n)
	}
	return nil
}

// willRefusal says why the CONNECT's will may not be published, "" when
// it may (or there is none): its topic must be a valid topic name outside
// $SYS, as a PUBLISH's must, and one the user (nil: anonymous) may write.
// Users' filters are fixed while the broker runs, so a will accepted at
// CONNECT stays allowed when it is sent, after a session takeover too.
func willRefusal(pk packets.Packet, u *authUser) string {
	if !pk.Connect.WillFlag {
		return ""
	}
	if !mochi.IsValidFilter(pk.Connect.WillTopic, true) {
		return "invalid will topic (a topic name outside $SYS, without wildcards)"
	}
	if u != nil && !u.canWrite(pk.Connect.WillTopic) {
		return "will topic not writable by this user"
	}
	return ""
}

// refuse refuses an authenticated CONNECT with code, counted and logged.
// mochi would answer a false OnConnectAuthenticate with "bad username or
// password" (0x86; 0x05 "not authorized" for MQTT 3), so the CONNACK is
// written here and the connection closed before mochi's own answer.
func (h *authHook) refuse(cl *mochi.Client, pk packets.Packet, code packets.Code, why string, attrs ...any) bool {
	h.counts.RefusedConnects.Add(1)
	h.log.Warn("mqtt client refused", append([]any{"remote", cl.Net.Remote, "client_id", cl.ID,
		"username", string(pk.Connect.Username), "reason", why}, attrs...)...)
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}, ReasonCode: code.Code,
		Properties: packets.Properties{ReasonString: code.Reason}}
	if cl.Properties.ProtocolVersion < 5 {
		ack.ReasonCode = packets.Err3NotAuthorized.Code
		if v3, ok := packets.V5CodesToV3[code]; ok {
			ack.ReasonCode = v3.Code
		}
	}
	_ = cl.WritePacket(ack)
	cl.Stop(code)
	return false
}

func (h *authHook) OnACLCheck(cl *mochi.Client, topic string, write bool) bool {
	if cl.Net.Inline || h.anonymous {
		return true
	}
	u := h.users[string(cl.Properties.Username)]
	if u == nil {
		return false
	}
	if !write {
		return u.canRead(topic)
	}
	if u.canWrite(topic) {
		return true
	}
	h.counts.DeniedPublishes.Add(1)
	h.log.Warn("mqtt publish denied by the broker's ACL", "username", u.name, "client_id", cl.ID, "topic", topic)
	return false
}

// OnSubscribed logs the filters the ACL refused (deliveries filtered per
// topic are the ACL working, not logged).
func (h *authHook) OnSubscribed(cl *mochi.Client, pk packets.Packet, codes []byte) {
	u := h.users[string(cl.Properties.Username)]
	if cl.Net.Inline || u == nil {
		return
	}
	for i, f := range pk.Filters {
		// MQTT 3 clients get every refusal as 0x80: ask the ACL again.
		if i < len(codes) && codes[i] >= packets.ErrUnspecifiedError.Code && !u.canRead(f.Filter) {
			h.counts.DeniedSubscribes.Add(1)
			h.log.Warn("mqtt subscribe denied by the broker's ACL", "username", string(cl.Properties.Username), "client_id", cl.ID, "filter", f.Filter)
		}
	}
}

// loopbackAddr reports whether a listener's address is loopback only.
// loopbackRemote reports whether a client's remote address ("ip:port") is
// a loopback one.
func loopbackRemote(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

func loopbackAddr(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
