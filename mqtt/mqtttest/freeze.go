// Package mqtttest holds test helpers around MQTT connections.
package mqtttest

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// FreezeProxy forwards TCP between clients and a broker and can freeze:
// it then stops reading and writing in both directions, like a broker
// stopped with SIGSTOP (the kernel still accepts what fits in the socket
// buffers, and nothing is answered). It can also go down (connections
// closed, connecting refused, like a stopped broker) and come back up on
// the same address.
type FreezeProxy struct {
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener  // nil while down
	thawed chan struct{} // closed while running; an open one while frozen
	conns  []net.Conn
}

// StartFreezeProxy listens on a free loopback port and forwards every
// connection to target (host:port) until the test ends.
func StartFreezeProxy(t testing.TB, target string) *FreezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	thawed := make(chan struct{})
	close(thawed)
	p := &FreezeProxy{ln: ln, addr: ln.Addr().String(), target: target, thawed: thawed}
	go p.accept(ln)
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's broker URL, tcp://127.0.0.1:port.
func (p *FreezeProxy) URL() string { return "tcp://" + p.addr }

func (p *FreezeProxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		// A small receive buffer, so that a frozen proxy soon stops
		// taking the client's bytes, as a stopped broker's full buffer.
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln { // went down meanwhile
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst, holding still while frozen.
func (p *FreezeProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 4096)
	for {
		p.gate()
		n, err := src.Read(buf)
		p.gate()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			return
		}
	}
}

func (p *FreezeProxy) gate() {
	p.mu.Lock()
	ch := p.thawed
	p.mu.Unlock()
	<-ch
}

// Freeze stops forwarding in both directions.
func (p *FreezeProxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default: // already frozen
	}
}

// Thaw resumes forwarding.
func (p *FreezeProxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

// Down closes every connection and stops listening: connecting is
// refused until Up.
func (p *FreezeProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Up listens again on the same address after Down.
func (p *FreezeProxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.ln = ln
	go p.accept(ln)
	return nil
}

func (p *FreezeProxy) close() {
	p.Thaw()
	p.Down()
}
