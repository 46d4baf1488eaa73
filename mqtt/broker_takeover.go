package mqtt

import (
	"bytes"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// takeoverWait bounds how long a new connection waits for the connection it
// replaces to be torn down.
const takeoverWait = time.Second

// takeoverHook makes a clean-session client id safe to reuse at once.
//
// mochi tears a clean-session connection down in its own goroutine: it
// checks whether the session was taken over, then unsubscribes and deletes
// the client by id. A new connection under the same id that is registered
// between the check and the delete loses its registration and its
// subscriptions: it is connected and never receives anything. A client that
// reconnects quickly after a network blip (or drops its old session on
// purpose, Options.FreshStart) hits that window. So before a new session is
// established, an old clean-session connection under the same id is stopped
// and its teardown awaited: its state is discarded by the new connection
// anyway. Runs after authentication, so nobody can end a session they could
// not take over.
type takeoverHook struct {
	mochi.HookBase
	clients *mochi.Clients
}

func (h *takeoverHook) ID() string { return "pilothouse-takeover" }

func (h *takeoverHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mochi.OnSessionEstablish}, []byte{b})
}

func (h *takeoverHook) OnSessionEstablish(cl *mochi.Client, _ packets.Packet) {
	old, ok := h.clients.Get(cl.ID)
	if !ok || old == cl || cl.Net.Inline || !expires(old) {
		return
	}
	old.Stop(packets.ErrSessionTakenOver)
	deadline := time.Now().Add(takeoverWait)
	for time.Now().Before(deadline) {
		if cur, ok := h.clients.Get(cl.ID); !ok || cur != old {
			return
		}
		time.Sleep(time.Millisecond) // polling mochi's teardown, which has no signal
	}
}

// expires says whether mochi discards a client's session when its
// connection ends (the condition of mochi's attachClient).
func expires(cl *mochi.Client) bool {
	if cl.Properties.ProtocolVersion == 5 {
		return cl.Properties.Props.SessionExpiryInterval == 0
	}
	return cl.Properties.Clean
}
