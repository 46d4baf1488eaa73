package mqtt

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestCleanSessionIDReusedAtOnce: a clean-session client that reconnects
// under its id right after leaving (a network blip, FreshStart's session
// drop) keeps receiving what it subscribes to.
func TestCleanSessionIDReusedAtOnce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "127.0.0.1:0")
	pub := dial(t, b.URL())
	connect := func(id string) *Client {
		c, err := newClient(Options{Broker: b.URL(), Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		c.opts.ClientID = id // a clean session under a given id
		if err := c.connectFirst(ctxT(t)); err != nil {
			t.Fatalf("connect %s: %v", id, err)
		}
		return c
	}
	for range 100 {
		id := randomClientID()
		connect(id).Close()
		c := connect(id)
		var got atomic.Bool
		if err := c.Subscribe(id+"/#", 0, func(Message) { got.Store(true) }); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		testutil.Eventually(t, 5*time.Second, "a message on the reused id", func() bool {
			_ = pub.Publish(ctxT(t), id+"/x", []byte("x"), 0, false)
			return got.Load()
		})
		c.Close()
	}
}
