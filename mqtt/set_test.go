package mqtt

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// setConns are the two SetSubscribers: a TCP Client and the Inline client
// of the same broker.
func setConns(t *testing.T, b *Broker) map[string]SetSubscriber {
	in := b.Inline(quietLogger())
	t.Cleanup(in.Close)
	return map[string]SetSubscriber{"client": dial(t, b.URL()), "inline": in}
}

// TestFilterSet: a set delivers the retained and live messages of its
// filters only, each message once however many filters match it, and
// follows Set: new filters bring their retained messages, removed ones
// stop delivering.
func TestFilterSet(t *testing.T) {
	for name := range setConns(t, startBroker(t, "127.0.0.1:0")) {
		t.Run(name, func(t *testing.T) {
			b := startBroker(t, "127.0.0.1:0")
			conn := setConns(t, b)[name]
			pub := dial(t, b.URL())
			publishRetainedSettled(t, b, pub, "r/1", "retained")
			var got inbox
			fs, err := conn.SubscribeSet(0, got.handle)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Set([]string{"h/a", "h/+", "r/1"}); err != nil {
				t.Fatal(err)
			}
			publish(t, pub, "h/a", "h/b", "h/a/set", "x/y", "end/1", "r/1")
			// Both r/1 (retained and live) before the set changes: the
			// retained one may come after the live ones.
			waitFor(t, 3*time.Second, "live messages", func() bool {
				n := 0
				for _, m := range got.all() {
					if m.Topic == "r/1" {
						n++
					}
				}
				return n == 2
			})
			if err := fs.Set([]string{"h/b", "end/+"}); err != nil {
				t.Fatal(err)
			}
			publish(t, pub, "h/a", "h/b", "end/2")
			waitFor(t, 3*time.Second, "the last message", func() bool { _, ok := got.find("end/2"); return ok })
			// Retained messages may come after live ones of other clients.
			want := []string{"end/2", "h/a", "h/b", "h/b", "r/1", "r/1"}
			if topics := topicsOf(got.all()); !slices.Equal(slices.Sorted(slices.Values(topics)), want) {
				t.Fatalf("delivered %q, want %q", topics, want)
			}
		})
	}
}

// publishRetainedSettled publishes a retained message and waits until the
// broker has forwarded it to the subscribers it had. mochi acknowledges a
// QoS 1 PUBLISH before it forwards it, so a client subscribing just after
// the acknowledgement can get the message twice: as the retained message
// of its SUBSCRIBE, and forwarded live.
func publishRetainedSettled(t *testing.T, b *Broker, pub *Client, topic, payload string) {
	t.Helper()
	var seen inbox
	if err := dial(t, b.URL()).Subscribe(topic, 0, seen.handle); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctxT(t), topic, []byte(payload), 1, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the retained "+topic+" forwarded", func() bool { _, ok := seen.find(payload); return ok })
}

func publish(t *testing.T, pub *Client, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		if err := pub.Publish(ctxT(t), topic, []byte(topic), 1, false); err != nil {
			t.Fatal(err)
		}
	}
}

func topicsOf(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Topic
	}
	return out
}

// TestFilterSetUnsubscribesAtTheBroker: filters gone from a Client's set
// are unsubscribed at the broker, so their messages are not even sent;
// filters another subscription still uses stay.
func TestFilterSetUnsubscribesAtTheBroker(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := dialWith(t, Options{Broker: b.URL(), ClientID: "set-client"})
	if err := c.Subscribe("keep/+", 0, func(Message) {}); err != nil {
		t.Fatal(err)
	}
	fs, err := c.SubscribeSet(0, func(Message) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Set([]string{"a/1", "a/2", "keep/+"}); err != nil {
		t.Fatal(err)
	}
	if got := brokerFilters(t, b, "set-client"); !slices.Equal(got, []string{"a/1", "a/2", "keep/+"}) {
		t.Fatalf("broker has %q", got)
	}
	if err := fs.Set([]string{"a/2"}); err != nil {
		t.Fatal(err)
	}
	if got := brokerFilters(t, b, "set-client"); !slices.Equal(got, []string{"a/2", "keep/+"}) {
		t.Fatalf("after Set, broker has %q", got)
	}
}

func brokerFilters(t *testing.T, b *Broker, clientID string) []string {
	t.Helper()
	cl, ok := b.srv.Clients.Get(clientID)
	if !ok {
		t.Fatalf("no client %s at the broker", clientID)
	}
	var out []string
	for f := range cl.State.Subscriptions.GetAll() {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// TestFilterSetManyFilters: a set of more filters than one SUBSCRIBE packet
// carries gets every retained message, on a new connection too. (A topic
// may come twice: mochi acknowledges a QoS 1 publish before it hands it to
// subscribers, so a subscription made just after the last acknowledgement
// can get that message live as well as retained.)
func TestFilterSetManyFilters(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	pub := dial(t, b.URL())
	const n = 3*subscribeBatch + 7
	filters := make([]string, n)
	for i := range filters {
		filters[i] = fmt.Sprintf("dev/%d", i)
		if err := pub.Publish(ctxT(t), filters[i], []byte("r"), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	for name, conn := range setConns(t, b) {
		var got inbox
		fs, err := conn.SubscribeSet(0, got.handle)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.Set(filters); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		waitFor(t, 5*time.Second, name+": every retained message", func() bool { return len(got.topics()) == n })
	}
	if err := pub.Publish(ctxT(t), "dev/x/bad", nil, 0, false); err != nil {
		t.Fatal(err)
	}
	fs, err := pub.SubscribeSet(0, func(Message) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Set([]string{"ok", "a/#/b"}); err == nil || !strings.Contains(err.Error(), "a/#/b") {
		t.Fatalf("Set with an invalid filter: %v", err)
	}
}

// TestFilterSetOrderUnderConcurrency: a set's handler, run by the
// deliverer when idle and by its goroutine under a burst, sees each
// publisher's messages in order, every one once, one at a time.
func TestFilterSetOrderUnderConcurrency(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	for name, conn := range setConns(t, b) {
		t.Run(name, func(t *testing.T) {
			const pubs, n = 4, 300
			var mu sync.Mutex
			last := map[string]int{}
			var running atomic.Int32
			total := 0
			fs, err := conn.SubscribeSet(0, func(m Message) {
				if running.Add(1) != 1 {
					t.Error("the handler runs twice at once")
				}
				defer running.Add(-1)
				var seq int
				fmt.Sscan(string(m.Payload), &seq)
				mu.Lock()
				if seq != last[m.Topic]+1 {
					t.Errorf("%s: %d after %d", m.Topic, seq, last[m.Topic])
				}
				last[m.Topic] = seq
				total++
				mu.Unlock()
				if seq%50 == 0 {
					time.Sleep(time.Millisecond) // a slow message: the next ones queue
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Set([]string{name + "/+"}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for p := range pubs {
				pub := dial(t, b.URL())
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 1; i <= n; i++ {
						if err := pub.Publish(ctxT(t), fmt.Sprintf("%s/p%d", name, p), []byte(fmt.Sprint(i)), 0, false); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			waitFor(t, 5*time.Second, "every message", func() bool { mu.Lock(); defer mu.Unlock(); return total == pubs*n })
		})
	}
}
