package mqtt

import (
	"testing"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// TestBrokerThrottlesWrongPasswords: a network address that sent
// ratelimit.MaxFailures wrong passwords is refused unread, the right
// password included (a guesser learns nothing), and counted; loopback is
// not throttled, so a local script cannot lock Zigbee2MQTT on the same
// host out of the house. The attacker judge tried 2,000 passwords a second.
func TestBrokerThrottlesWrongPasswords(t *testing.T) {
	users, err := newAuthUsers([]BrokerUser{{Name: "z2m", Password: "s3cret", Read: []string{"#"}, Write: []string{"#"}}})
	if err != nil {
		t.Fatal(err)
	}
	counts := &AuthCounts{}
	h := &authHook{users: users, log: quietLogger(), counts: counts, fails: ratelimit.New(nil)}
	try := func(remote, pw string) bool {
		cl := &mochi.Client{Net: mochi.ClientConnection{Remote: remote}}
		return h.OnConnectAuthenticate(cl, packets.Packet{Connect: packets.ConnectParams{UsernameFlag: true, Username: []byte("z2m"), Password: []byte(pw)}})
	}
	for _, tc := range []struct {
		remote    string
		throttled bool
	}{{"192.0.2.7:40000", true}, {"127.0.0.1:40000", false}, {"[::1]:40000", false}} {
		for range ratelimit.MaxFailures + 5 {
			if try(tc.remote, "guess") {
				t.Fatalf("%s: a wrong password passed", tc.remote)
			}
		}
		if got := try(tc.remote, "s3cret"); got == tc.throttled {
			t.Errorf("%s: the right password after %d wrong ones passed %v, want %v", tc.remote, ratelimit.MaxFailures+5, got, !tc.throttled)
		}
	}
	if th := counts.Throttled.Load(); th != 6 {
		t.Errorf("throttled %d, want 6 (5 guesses and the right password from 192.0.2.7)", th)
	}
	if !try("192.0.2.8:40000", "s3cret") {
		t.Error("another address is throttled too")
	}
}
