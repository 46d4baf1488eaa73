package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// trickler sends a request whose body announces 100000 bytes and then
// arrives one byte at a time until stopped (round-2 attack "bodyhold").
type trickler struct {
	c    net.Conn
	done chan struct{} // closed when the server has answered or closed
}

func startTrickle(t *testing.T, addr, head string, stop <-chan struct{}, wg *sync.WaitGroup) *trickler {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, head+"Content-Length: 100000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	tr := &trickler{c: c, done: make(chan struct{})}
	wg.Add(2)
	go func() { // the server answered or closed: a read returns
		defer wg.Done()
		_, _ = c.Read(make([]byte, 1))
		close(tr.done)
	}()
	go func() {
		defer wg.Done()
		defer c.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tr.done:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	return tr
}

// TestSlowBodiesAreBounded: a body trickled at a byte per tick gets an
// answer or a closed connection within the body timeout, on /mcp (with and
// without a token) and the web UI alike; and connections trickling bodies
// cannot lock /healthz out (they are closed first past max_connections).
func TestSlowBodiesAreBounded(t *testing.T) {
	const host = "Host: 127.0.0.1\r\n"
	heads := []struct{ name, head string }{
		{"mcp without a token", "POST /mcp HTTP/1.1\r\n" + host + "Content-Type: application/json\r\n"},
		{"mcp with a token", "POST /mcp HTTP/1.1\r\n" + host + "Authorization: Bearer guest-token\r\nContent-Type: application/json\r\n"},
		{"web login", "POST /login HTTP/1.1\r\n" + host + "Content-Type: application/x-www-form-urlencoded\r\n"},
	}
	t.Run("a trickled body ends within the body timeout", func(t *testing.T) {
		cfg := testConfig(t)
		twoPrincipals(cfg)
		cfg.bodyTimeout = 500 * time.Millisecond
		a := startTestApp(t, cfg)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(stop)
		for _, h := range heads {
			tr := startTrickle(t, a.ln.Addr().String(), h.head, stop, &wg)
			select {
			case <-tr.done:
			case <-time.After(5 * time.Second):
				t.Errorf("%s: no answer and no close 5 s into a trickled body (body timeout 500 ms)", h.name)
			}
		}
		var hz struct {
			HTTP struct {
				BodiesLate int `json:"bodies_late"`
			} `json:"http"`
		}
		resp, err := http.Get(a.URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&hz); err != nil || hz.HTTP.BodiesLate < 2 {
			t.Errorf("/healthz http.bodies_late = %d (%v), want the 2 bodies read too late counted", hz.HTTP.BodiesLate, err)
		}
	})
	t.Run("trickling connections do not lock out /healthz", func(t *testing.T) {
		cfg := testConfig(t)
		twoPrincipals(cfg)
		cfg.Limits.MaxConnections = 16
		a := startTestApp(t, cfg)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(stop)
		for i := range 48 {
			startTrickle(t, a.ln.Addr().String(), heads[i%len(heads)].head, stop, &wg)
		}
		hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		var failed []string
		for range 10 {
			resp, err := hc.Get(a.URL() + "/healthz")
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed = append(failed, fmt.Sprint(resp.StatusCode))
			}
		}
		if len(failed) > 0 {
			t.Errorf("/healthz failed %d of 10 times with 48 trickling bodies open (max_connections 16): %s", len(failed), strings.Join(failed, "; "))
		}
	})
}
