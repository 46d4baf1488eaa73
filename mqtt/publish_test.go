package mqtt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// scriptedBroker accepts one client, acknowledges its CONNECT (no session
// present) and then leaves each packet to the test.
func scriptedBroker(t *testing.T) (url string, conns <-chan net.Conn) {
	t.Helper()
	return sessionBroker(t, false)
}

// readOne reads one packet from r and not a byte more.
func readOne(r io.Reader) (packet, error) {
	return readPacket(bufio.NewReader(oneByte{r}), maxRemainingLength)
}

func writePuback(t *testing.T, c net.Conn, id uint16) {
	t.Helper()
	if _, err := c.Write(encodeAck(pubackType, id)); err != nil {
		t.Fatal(err)
	}
}

// TestQoS1PublishWaitsForItsOwnPuback: a QoS 1 publish, written by the
// connection itself, returns when the broker acknowledges its packet
// identifier, not before and not on another one's PUBACK; when the
// connection is lost while it waits, it returns ErrNotConnected at once.
func TestQoS1PublishWaitsForItsOwnPuback(t *testing.T) {
	url, conns := scriptedBroker(t)
	c := dialWith(t, Options{Broker: url, PublishTimeout: time.Minute})
	broker := <-conns
	done := make(chan error, 1)
	go func() { done <- c.Publish(ctxT(t), "bl1/set", []byte(`{"state":"ON"}`), 1, true) }()
	pub, err := readOne(broker)
	if err != nil {
		t.Fatal(err)
	}
	if pub.kind != publishType || pub.pubQoS() != 1 || pub.flags&retainBit == 0 || pub.topic != "bl1/set" || string(pub.payload) != `{"state":"ON"}` || pub.id == 0 {
		t.Fatalf("the broker read %s", describe(pub))
	}
	writePuback(t, broker, pub.id+1) // someone else's: ignored
	select {
	case err := <-done:
		t.Fatalf("Publish returned %v before its PUBACK", err)
	default:
	}
	writePuback(t, broker, pub.id)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Publish = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Publish did not return after its PUBACK")
	}

	go func() { done <- c.Publish(ctxT(t), "bl1/set", []byte("x"), 1, false) }()
	if _, err := readOne(broker); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	broker.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotConnected) {
			t.Fatalf("Publish across a lost connection = %v, want ErrNotConnected", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Publish still waiting %s after the connection was lost", time.Since(start))
	}
}

// TestPublishesInterleaveWithSubscribes: many publishers at QoS 0 and 1
// share the stream with SUBSCRIBE and UNSUBSCRIBE packets (a packet
// cut by another would make the broker drop the connection); every QoS 1
// publish is acknowledged and every message arrives.
func TestPublishesInterleaveWithSubscribes(t *testing.T) {
	brokers := map[string]Options{"mochi": {Broker: startBroker(t, "127.0.0.1:0").URL()}}
	if url := os.Getenv("PILOTHOUSE_TEST_MOSQUITTO"); url != "" { // CI's Mosquitto, stricter about framing
		brokers["mosquitto"] = Options{Broker: url, Username: os.Getenv("PILOTHOUSE_TEST_MOSQUITTO_USER"),
			Password: os.Getenv("PILOTHOUSE_TEST_MOSQUITTO_PASSWORD")}
	}
	for name, o := range brokers {
		t.Run(name, func(t *testing.T) { interleave(t, o, randomClientID()) })
	}
}

func interleave(t *testing.T, o Options, prefix string) {
	sub := dialWith(t, o)
	var got inbox
	if err := sub.Subscribe(prefix+"/#", 1, got.handle); err != nil {
		t.Fatal(err)
	}
	pub := dialWith(t, o)
	const publishers, each = 8, 200
	stop := make(chan struct{})
	churned := make(chan error, 1)
	go func() { churned <- churn(pub, prefix, stop) }()
	var wg sync.WaitGroup
	errs := make(chan error, publishers*each)
	for g := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				payload := make([]byte, 10+(g*each+i)%700)
				errs <- pub.Publish(ctxT(t), fmt.Sprintf("%s/%d/%d", prefix, g, i), payload, byte(i%2), false)
			}
		}()
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Publish = %v", err)
		}
	}
	if err := <-churned; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every message to arrive", func() bool { return len(got.topics()) == publishers*each })
	if o := pub.Link().LastOutage; o != nil {
		t.Fatalf("the publisher's connection was lost: %s", o.Reason)
	}
}

// churn changes a filter set until stop, so that SUBSCRIBE
// and UNSUBSCRIBE packets among the publishes.
func churn(c *Client, prefix string, stop <-chan struct{}) error {
	fs, err := c.SubscribeSet(1, func(Message) {})
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if err := fs.Set([]string{fmt.Sprintf("%s-churn/%d", prefix, i), fmt.Sprintf("%s-churn/%d/#", prefix, i)}); err != nil {
			return fmt.Errorf("churn %d: %w", i, err)
		}
	}
}
