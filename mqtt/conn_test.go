package mqtt

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// The dialer (dial.go) serves every scheme; these tests
// run a publish/subscribe round trip over TLS and WebSocket against mochi.

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func startMochi(t *testing.T, l listeners.Listener) {
	t.Helper()
	srv := mochi.New(&mochi.Options{Logger: quietLogger()})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
}

func roundtrip(t *testing.T, o Options) {
	t.Helper()
	o.Logger = quietLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, o)
	if err != nil {
		t.Fatalf("Dial(%s): %v", o.Broker, err)
	}
	defer c.Close()
	in := &inbox{}
	if err := c.Subscribe("conn/+/x", 1, in.handle); err != nil {
		t.Fatal(err)
	}
	// Many packets, some bigger than the read buffer, arrive in order.
	big := make([]byte, readBuffer+1000)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	for i := range 50 {
		p := []byte(fmt.Sprintf("m%02d", i))
		if i == 25 {
			p = append(p, big...)
		}
		if err := c.Publish(ctx, fmt.Sprintf("conn/%d/x", i), p, 1, false); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "50 messages", func() bool { return len(in.all()) == 50 })
	for i, m := range in.all() {
		if want := fmt.Sprintf("m%02d", i); string(m.Payload[:3]) != want || m.Topic != fmt.Sprintf("conn/%d/x", i) {
			t.Fatalf("message %d: %s %.3s", i, m.Topic, m.Payload)
		}
		if i == 25 && len(m.Payload) != 3+len(big) {
			t.Fatalf("big message: %d bytes", len(m.Payload))
		}
	}
}

func TestDialTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingListener{Listener: nl}
	startMochi(t, listeners.NewNet("tls", tls.NewListener(counted, &tls.Config{Certificates: []tls.Certificate{cert}})))
	t.Cleanup(counted.waitClosed) // runs before mochi's Close (LIFO)
	roundtrip(t, Options{Broker: "ssl://" + nl.Addr().String(), TLS: &tls.Config{RootCAs: pool}})

	// A certificate the client does not trust is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if c, err := Dial(ctx, Options{Broker: "ssl://" + nl.Addr().String(), Logger: quietLogger(), ConnectTimeout: time.Second}); err == nil {
		c.Close()
		t.Fatal("an untrusted certificate was accepted")
	}
}

// countingListener counts the connections it accepted that are not closed
// yet. mochi's Close races (under -race) with a connection it is still
// attaching, such as the refused TLS handshake's: a test waits until mochi
// has closed every one before closing mochi.
type countingListener struct {
	net.Listener
	open atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) waitClosed() {
	testutil.Within(10*time.Second, func() bool { return l.open.Load() == 0 })
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

func TestDialWebSocket(t *testing.T) {
	// mochi's WebSocket listener takes an address, not a listener: find a
	// free port and give it over (a brief window another process could use).
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := nl.Addr().String()
	nl.Close()
	startMochi(t, listeners.NewWebsocket(listeners.Config{ID: "ws", Address: addr}))
	roundtrip(t, Options{Broker: "ws://" + addr + "/"})
}

// TestPublishingThroughBrokerRestarts publishes QoS 1 messages without a
// pause while the broker restarts: the session then resends unacknowledged
// messages while new ones are written (run with -race: a resend is a copy
// of the packet, see session.resume).
func TestPublishingThroughBrokerRestarts(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	addr := b.Addr()
	pub := dial(t, b.URL())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			_ = pub.Publish(ctx, "stress/x", []byte(fmt.Sprint(i)), 1, false) // errors while down are expected
			cancel()
		}
	}()
	for range 3 {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "the client to notice", func() bool { return !pub.Connected() })
		b = startBroker(t, addr)
		waitFor(t, 15*time.Second, "the client to reconnect", func() bool { return pub.Connected() })
	}
	close(stop)
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, "stress/x", []byte("last"), 1, false); err != nil {
		t.Fatalf("publish after the restarts: %v", err)
	}
}

// TestDialWebSocketTLS: wss:// dials TLS under the WebSocket with the
// options' TLS configuration (a self-signed certificate the test trusts).
func TestDialWebSocketTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := nl.Addr().String()
	nl.Close()
	startMochi(t, listeners.NewWebsocket(listeners.Config{ID: "wss", Address: addr,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}))
	roundtrip(t, Options{Broker: "wss://" + addr + "/", TLS: &tls.Config{RootCAs: pool}})
}
