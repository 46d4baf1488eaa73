package mqtt

import (
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"
)

// nagleProxy forwards TCP to target, writing to its clients with Nagle's
// algorithm on (as Mosquitto does by default): a small write waits while
// earlier data to that client is unacknowledged.
func nagleProxy(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				return
			}
			_ = c.(*net.TCPConn).SetNoDelay(false)
			t.Cleanup(func() { _ = c.Close(); _ = b.Close() })
			go func() { _, _ = io.Copy(b, c) }()
			go func() { _, _ = io.Copy(c, b) }()
		}
	}()
	return "tcp://" + ln.Addr().String()
}

// TestNoNagleStallBehindPubacks: a client that publishes a QoS 1 command
// for every event it receives, through a broker that writes with Nagle on,
// gets the next event without waiting for its kernel's delayed
// acknowledgement of the PUBACK (~24 ms an event at 1,000/s before).
func TestNoNagleStallBehindPubacks(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := dialWith(t, Options{Broker: nagleProxy(t, b.Addr())})
	lat := make(chan time.Duration, 200)
	if err := c.Subscribe("ev", 0, func(m Message) {
		sent, _ := strconv.ParseInt(string(m.Payload), 10, 64)
		lat <- time.Since(time.Unix(0, sent))
		_ = c.Publish(ctxT(t), "cmd", []byte("on"), 1, false)
	}); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, b.URL())
	const n = 100
	var got []time.Duration
	for range n {
		if err := pub.Publish(ctxT(t), "ev", []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0, false); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-lat:
			got = append(got, d)
		case <-time.After(2 * time.Second):
			t.Fatal("an event did not arrive")
		}
		time.Sleep(time.Millisecond)
	}
	slices.Sort(got)
	if p50 := got[n/2]; p50 > 8*time.Millisecond {
		t.Fatalf("median event latency %s through a Nagle broker, want well under the delayed-ACK stall", p50)
	}
}
