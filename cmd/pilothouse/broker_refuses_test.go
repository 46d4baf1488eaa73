package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// Answers of fakeBroker to a SUBSCRIBE.
const (
	subGrant  = iota // every filter granted at QoS 1
	subRefuse        // every filter refused (0x80, an ACL)
	subIgnore        // no SUBACK at all
)

// fakeBroker is an MQTT 3.1.1 broker that accepts every connection and
// answers SUBSCRIBE as its mode says (a stock broker with an ACL, or a
// broken one), PINGREQ with PINGRESP, and ignores the rest.
type fakeBroker struct {
	ln   net.Listener
	mode atomic.Int32
	subs atomic.Int64 // SUBSCRIBE packets read
	mu   sync.Mutex
	open []net.Conn
}

func startFakeBroker(t *testing.T, mode int32) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: ln}
	b.mode.Store(mode)
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.open {
			c.Close()
		}
		b.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.open = append(b.open, c)
			b.mu.Unlock()
			go b.serve(c)
		}
	}()
	return b
}

func (b *fakeBroker) URL() string { return "tcp://" + b.ln.Addr().String() }

func (b *fakeBroker) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		kind, body, err := readMQTTPacket(r)
		if err != nil {
			return
		}
		var out []byte
		switch kind {
		case 1: // CONNECT
			out = []byte{0x20, 2, 0, 0}
		case 8: // SUBSCRIBE
			b.subs.Add(1)
			out = b.suback(body)
		case 12: // PINGREQ
			out = []byte{0xd0, 0}
		case 10: // UNSUBSCRIBE
			out = []byte{0xb0, 2, body[0], body[1]}
		case 14: // DISCONNECT
			return
		}
		if out != nil {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}

// suback answers a SUBSCRIBE's body (packet id, then filters with their
// QoS) as the mode says, or nil.
func (b *fakeBroker) suback(body []byte) []byte {
	mode := b.mode.Load()
	if mode == subIgnore || len(body) < 2 {
		return nil
	}
	var codes []byte
	for rest := body[2:]; len(rest) >= 2; {
		n := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 3+n {
			break
		}
		code := byte(1)
		if mode == subRefuse {
			code = 0x80
		}
		codes, rest = append(codes, code), rest[3+n:]
	}
	var rl bytes.Buffer
	for n := 2 + len(codes); ; {
		d := byte(n % 128)
		if n /= 128; n > 0 {
			rl.WriteByte(d | 0x80)
			continue
		}
		rl.WriteByte(d)
		break
	}
	return append(append(append([]byte{0x90}, rl.Bytes()...), body[0], body[1]), codes...)
}

// readMQTTPacket reads one packet: its type and its body.
func readMQTTPacket(r *bufio.Reader) (byte, []byte, error) {
	h, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, shift := 0, 0
	for {
		d, err := r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		n |= int(d&0x7f) << shift
		if d&0x80 == 0 {
			break
		}
		if shift += 7; shift > 21 {
			return 0, nil, fmt.Errorf("bad remaining length")
		}
	}
	body := make([]byte, n)
	_, err = io.ReadFull(r, body)
	return h >> 4, body, err
}

// syncBuffer is a log a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStartsDegradedWhenTheBrokerRefusesSubscriptions: a broker that
// refuses every subscription (SUBACK 0x80) or never acknowledges one
// does not stop the server: it serves HTTP, /healthz and the log say
// why, and it subscribes again until the broker accepts.
func TestStartsDegradedWhenTheBrokerRefusesSubscriptions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, tc := range []struct {
		name       string
		mode       int32
		status, in string // /healthz's status and the log say
	}{
		{"refused", subRefuse, "refused by the broker (code 0x80)", "the broker refused or did not acknowledge subscriptions"},
		{"unanswered", subIgnore, "no answer from the broker within", "the broker refused or did not acknowledge subscriptions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startFakeBroker(t, tc.mode)
			port := freePort(t)
			var log syncBuffer
			cmd := exec.Command(bin, "serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--broker", b.URL(), "--demo=false",
				"--data", t.TempDir(), "--log-level", "warn")
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			url := fmt.Sprintf("http://127.0.0.1:%d", port)
			var status string
			testutil.Eventually(t, 30*time.Second, "/healthz to say the subscriptions are refused", func() bool {
				select {
				case err := <-exited:
					exited <- err
					t.Fatalf("the server exited (%v):\n%s", err, log.String())
				default:
				}
				code, h := getHealthOK(url)
				status = h
				return code == http.StatusServiceUnavailable && strings.Contains(h, tc.status)
			})
			if !strings.Contains(status, "retrying") || !strings.Contains(log.String(), tc.in) {
				t.Fatalf("status %q; log:\n%s", status, log.String())
			}
			tried := b.subs.Load()
			b.mode.Store(subGrant)
			testutil.Eventually(t, 60*time.Second, "/healthz ok once the broker accepts", func() bool {
				code, _ := getHealthOK(url)
				return code == http.StatusOK
			})
			if b.subs.Load() <= tried {
				t.Fatalf("no SUBSCRIBE after the broker changed its mind (%d before)", tried)
			}
		})
	}
}

// getHealthOK reads /healthz's code and status, 0 while it does not answer.
func getHealthOK(url string) (int, string) {
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var h struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	return resp.StatusCode, h.Status
}
