package mqtt

import (
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestCleanSessionIDReusedAtOnce: a clean-session client that reconnects
// under its id right after leaving (a network blip, FreshStart's session
// drop) keeps receiving what it subscribes to.
func TestCleanSessionIDReusedAtOnce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "127.0.0.1:0")
	pub := dial(t, b.URL())
	connect := func(id string) paho.Client {
		pc := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id).SetCleanSession(true).SetAutoReconnect(false))
		if tok := pc.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("connect %s: %v", id, tok.Error())
		}
		return pc
	}
	for range 100 {
		id := randomClientID()
		connect(id).Disconnect(0)
		c := connect(id)
		var got atomic.Bool
		if tok := c.Subscribe(id+"/#", 0, func(paho.Client, paho.Message) { got.Store(true) }); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe: %v", tok.Error())
		}
		testutil.Eventually(t, 5*time.Second, "a message on the reused id", func() bool {
			_ = pub.Publish(ctxT(t), id+"/x", []byte("x"), 0, false)
			return got.Load()
		})
		c.Disconnect(0)
	}
}
