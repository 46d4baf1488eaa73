package mqtt

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestWebSocketHandshakeBounded: a server that answers the upgrade and
// then streams header lines without end (fast, or one byte at a time) is
// dropped after maxHandshakeBytes or at the connect deadline, not read
// into the heap for ever (an attacker round grew the server to 2.7 GB).
func TestWebSocketHandshakeBounded(t *testing.T) {
	for _, c := range []struct {
		name  string
		pause time.Duration
		want  string
	}{
		{"endless headers", 0, "more than"},
		{"slow headers", 50 * time.Millisecond, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				buf := make([]byte, 4096)
				_, _ = conn.Read(buf)
				if _, err := conn.Write([]byte("HTTP/1.1 101 Switching Protocols\r\n")); err != nil {
					return
				}
				line := []byte("X-Filler: " + strings.Repeat("a", 1000) + "\r\n")
				if c.pause > 0 {
					line = []byte("X")
				}
				for {
					if _, err := conn.Write(line); err != nil {
						return
					}
					if c.pause > 0 {
						time.Sleep(c.pause) // the hostile server's pace, not synchronisation
					}
				}
			}()
			u, _ := url.Parse("ws://" + ln.Addr().String() + "/mqtt")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			tcp := func(ctx context.Context, n, addr string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, n, addr)
			}
			nc, err := dialWebsocket(ctx, u, nil, tcp)
			if err == nil {
				nc.Close()
				t.Fatal("the handshake succeeded")
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Fatalf("the handshake took %s", took)
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want it to say %q", err, c.want)
			}
		})
	}
}
