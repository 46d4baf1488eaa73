package mqtt

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// slowConn records what is written to it, a write at a time, each taking
// a while (a socket the broker reads slowly).
type slowConn struct {
	net.Conn
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	fail   bool
}

func (c *slowConn) Write(b []byte) (int, error) {
	time.Sleep(200 * time.Microsecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return 0, errors.New("broken pipe")
	}
	c.writes++
	c.buf.Write(b)
	return len(b), nil
}

func (c *slowConn) Close() error { return nil }

// TestConcurrentPublishesShareWrites: publishes written while another
// goroutine writes are handed to it: every packet arrives whole, each
// goroutine's in the order it wrote them, in fewer writes than packets.
func TestConcurrentPublishesShareWrites(t *testing.T) {
	conn := &slowConn{}
	d := newDemuxConn(conn, inbound{})
	d.out.accepted(0)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := d.publish(fmt.Sprintf("w%d", g), []byte(fmt.Sprint(i)), 0, false, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	next := make([]int, writers)
	r := bytes.NewReader(conn.buf.Bytes())
	for n := 0; n < writers*each; n++ {
		p, err := packets.ReadPacket(r)
		if err != nil {
			t.Fatalf("packet %d: %v", n, err)
		}
		pub := p.(*packets.PublishPacket)
		var g int
		fmt.Sscanf(pub.TopicName, "w%d", &g)
		if want := fmt.Sprint(next[g]); string(pub.Payload) != want {
			t.Fatalf("writer %d: packet %s after %d", g, pub.Payload, next[g])
		}
		next[g]++
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes after the last packet", r.Len())
	}
	if conn.writes >= writers*each {
		t.Errorf("%d writes for %d packets: none shared", conn.writes, writers*each)
	}
	t.Logf("%d packets in %d writes", writers*each, conn.writes)
}

// TestFailedSharedWriteFailsItsPublishes: when the write carrying handed
// over packets fails, the connection closes and the QoS 1 publishes in it
// hear ErrNotConnected.
func TestFailedSharedWriteFailsItsPublishes(t *testing.T) {
	conn := &slowConn{fail: true}
	d := newDemuxConn(conn, inbound{})
	d.out.accepted(0)
	const n = 8
	acks := make([]chan error, n)
	var wg sync.WaitGroup
	for i := range acks {
		acks[i] = make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Failed in its own write or another's: told either way; refused
			// at once once an earlier write has failed the connection.
			if _, err := d.publish("t", nil, 1, false, &waiter{ch: acks[i]}); errors.Is(err, ErrNotConnected) {
				select {
				case acks[i] <- err:
				default: // the connection's failure came first
				}
			}

		}()
	}
	wg.Wait()
	for i, ch := range acks {
		select {
		case err := <-ch:
			if !errors.Is(err, ErrNotConnected) {
				t.Errorf("publish %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("publish %d never heard", i)
		}
	}
}
