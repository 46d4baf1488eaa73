package mqtt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// slowConn records what is written to it, a write at a time, each taking
// a while (a socket the broker reads slowly).
type slowConn struct {
	net.Conn
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	fail   bool
	closed chan struct{}
}

// Read waits for Close: the broker sends nothing.
func (c *slowConn) Read([]byte) (int, error) {
	<-c.closed
	return 0, net.ErrClosed
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

func (c *slowConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

// connectedTo returns a client whose connection is nc (a handshake
// already made), with its reading loop running.
func connectedTo(t *testing.T, nc net.Conn) (*Client, *conn) {
	t.Helper()
	c, err := newClient(Options{Broker: "tcp://127.0.0.1:1", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k := newConn(nc, &watchedConn{})
	if !c.sess.attach(k) {
		t.Fatal("attach")
	}
	c.wg.Add(1)
	go c.readLoop(k)
	return c, k
}

// TestConcurrentPublishesShareWrites: publishes written while another
// goroutine writes are handed to it: every packet arrives whole, each
// goroutine's in the order it wrote them, in fewer writes than packets.
func TestConcurrentPublishesShareWrites(t *testing.T) {
	conn := &slowConn{closed: make(chan struct{})}
	k := newConn(conn, &watchedConn{})
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p, _, err := encodePublish(fmt.Sprintf("w%d", g), []byte(fmt.Sprint(i)), 0, false, 0)
				if err == nil {
					err = k.writePacket(p)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	next := make([]int, writers)
	r := bufio.NewReader(bytes.NewReader(conn.buf.Bytes()))
	for n := 0; n < writers*each; n++ {
		p, err := readPacket(r, maxRemainingLength)
		if err != nil || p.kind != publishType {
			t.Fatalf("packet %d: %v %v", n, p, err)
		}
		var g int
		fmt.Sscanf(p.topic, "w%d", &g)
		if want := fmt.Sprint(next[g]); string(p.payload) != want {
			t.Fatalf("writer %d: packet %s after %d", g, p.payload, next[g])
		}
		next[g]++
	}
	if r.Buffered() != 0 {
		t.Fatalf("%d bytes after the last packet", r.Buffered())
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
	conn := &slowConn{fail: true, closed: make(chan struct{})}
	c, _ := connectedTo(t, conn)
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
			if _, err := c.PublishAsync(context.Background(), "t", nil, 1, false, AckFunc(func(err error) { acks[i] <- err })); err != nil {
				acks[i] <- err
			}
		}()
	}
	wg.Wait()
	for i, ch := range acks {
		select {
		case err := <-ch:
			if !errors.Is(err, ErrNotConnected) && err.Error() != "mqtt: publish \"t\": broken pipe" {
				t.Errorf("publish %d: %v", i, err)
			}
		case <-time.After(15 * time.Second): // the reader's exit tells a handed-over one; slow under -race on a loaded machine
			t.Fatalf("publish %d never heard", i)
		}
	}
}
