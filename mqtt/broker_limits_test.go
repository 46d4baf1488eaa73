package mqtt

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// received collects the messages a subscription got, by topic.
type received struct {
	mu   sync.Mutex
	byTo map[string][][]byte
}

func subscribeAll(t *testing.T, c *Client, filter string) *received {
	t.Helper()
	r := &received{byTo: map[string][][]byte{}}
	if err := c.Subscribe(filter, 1, func(m Message) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.byTo[m.Topic] = append(r.byTo[m.Topic], bytes.Clone(m.Payload))
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *received) sizes(topic string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, p := range r.byTo[topic] {
		out = append(out, len(p))
	}
	return out
}

// TestBrokerRefusesOversizedPacket: the embedded broker had no maximum
// packet size, so one 200 MB retained PUBLISH by a user allowed only its
// own topic added ~1 GB of RSS for good (issue 14 round 2). By default a
// packet over DefaultMaxPacketBytes now disconnects its sender before the
// payload is read; it is neither delivered nor retained, and counted.
//
// The limit is exercised at 1 MiB: 16 MiB payloads take tens of seconds
// under -race on a loaded machine. The default is checked as configured.
func TestBrokerRefusesOversizedPacket(t *testing.T) {
	if got := startBroker(t, "127.0.0.1:0").srv.Options.Capabilities.MaximumPacketSize; got != DefaultMaxPacketBytes {
		t.Fatalf("default maximum packet size %d, want %d", got, DefaultMaxPacketBytes)
	}
	const limit = 1 << 20
	b, err := StartBroker("127.0.0.1:0", quietLogger(), WithMaxPacketBytes(limit))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	sub := subscribeAll(t, dial(t, b.URL()), "big/#")
	pub := dial(t, b.URL())
	_ = pub.Publish(ctxT(t), "big/huge", bytes.Repeat([]byte("x"), limit+1), 0, true)
	_ = pub.Publish(ctxT(t), "big/after", []byte("same connection"), 0, false)
	testutil.Eventually(t, 10*time.Second, "the oversized packet counted", func() bool {
		return b.LimitCounts().OversizedPackets.Load() == 1
	})
	other := dial(t, b.URL())
	if err := other.Publish(ctxT(t), "big/marker", []byte("m"), 1, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the marker", func() bool { return len(sub.sizes("big/marker")) == 1 })
	if got := sub.sizes("big/huge"); len(got) != 0 {
		t.Fatalf("oversized payload delivered: %v", got)
	}
	late := subscribeAll(t, dial(t, b.URL()), "big/#")
	if err := other.Publish(ctxT(t), "big/marker2", []byte("m"), 1, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the second marker", func() bool { return len(late.sizes("big/marker2")) == 1 })
	if got := late.sizes("big/huge"); len(got) != 0 {
		t.Fatalf("oversized payload retained: %v", got)
	}
	if n := b.LimitCounts().RetainedBytes.Load(); n != 0 {
		t.Fatalf("retained bytes = %d, want 0", n)
	}

	// Just under the maximum (less the PUBLISH's header and topic) passes.
	fits := bytes.Repeat([]byte("y"), limit-64)
	if err := other.Publish(ctxT(t), "big/fits", fits, 1, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the payload that fits", func() bool { return len(sub.sizes("big/fits")) == 1 })
}

// TestBrokerBoundsRetainedBytes: retained messages are bounded in total,
// each counted as its payload, its topic twice and an overhead (an
// attacker round retained 1.6 GB as 13,000 one-byte payloads on 60,000-
// byte topics while the account said 28 KB); a topic over
// maxRetainedTopic is never retained. A retained message beyond is
// delivered to current subscribers but not retained, the topic's earlier
// retained message stays, replacing or clearing one frees its bytes.
func TestBrokerBoundsRetainedBytes(t *testing.T) {
	b, err := StartBroker("127.0.0.1:0", quietLogger(), WithMaxRetainedBytes(1500))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	live := subscribeAll(t, dial(t, b.URL()), "r/#")
	pub := dial(t, b.URL())
	long := "r/" + strings.Repeat("t", maxRetainedTopic)
	steps := []struct {
		topic string
		n     int
	}{ // a 3-byte topic costs 600+2*3+256 = 862 for 600 bytes of payload
		{"r/1", 600}, // 862
		{"r/2", 600}, // 1724 > 1500: not retained
		{"r/1", 300}, // 562
		{"r/2", 600}, // 1424
		{"r/3", 200}, // 1886: not retained
		{"r/2", 0},   // cleared: 562
		{"r/3", 200}, // 1024
		{long, 1},    // topic too long: not retained
	}
	for i, s := range steps {
		if err := pub.Publish(ctxT(t), s.topic, bytes.Repeat([]byte{'a' + byte(i)}, s.n), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 5*time.Second, "every message delivered live", func() bool {
		return len(live.sizes("r/1"))+len(live.sizes("r/2"))+len(live.sizes("r/3"))+len(live.sizes(long)) == len(steps)
	})
	if got := b.LimitCounts().RetainRefused.Load(); got != 3 {
		t.Fatalf("retain refused = %d, want 3", got)
	}
	if got := b.LimitCounts().RetainedBytes.Load(); got != 1024 {
		t.Fatalf("retained bytes = %d, want 1024", got)
	}
	late := subscribeAll(t, dial(t, b.URL()), "r/#")
	testutil.Eventually(t, 5*time.Second, "the retained messages", func() bool {
		return len(late.sizes("r/1")) == 1 && len(late.sizes("r/3")) == 1
	})
	if r1, r2, r3, rl := late.sizes("r/1"), late.sizes("r/2"), late.sizes("r/3"), late.sizes(long); r1[0] != 300 || len(r2) != 0 || r3[0] != 200 || len(rl) != 0 {
		t.Fatalf("retained r/1 %v r/2 %v r/3 %v long %v, want [300] [] [200] []", r1, r2, r3, rl)
	}
}
