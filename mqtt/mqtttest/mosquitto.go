package mqtttest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Mosquitto is a Mosquitto process of a test's own, started from the
// configuration CI runs its Mosquitto with (PILOTHOUSE_TEST_MOSQUITTO_CONF:
// password auth, persistence on), on a free loopback port and with its
// persistence in a temporary folder, so that a test can stop and start it
// again with its sessions kept.
type Mosquitto struct {
	t        testing.TB
	bin      string
	conf     string
	log      string
	Addr     string // host:port
	User     string
	Password string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// StartMosquitto starts a Mosquitto of the test's own, or returns false
// when CI's Mosquitto is not configured (PILOTHOUSE_TEST_MOSQUITTO and its
// _CONF unset) or the mosquitto binary is missing.
func StartMosquitto(t testing.TB) (*Mosquitto, bool) {
	t.Helper()
	src := os.Getenv("PILOTHOUSE_TEST_MOSQUITTO_CONF")
	bin, err := exec.LookPath("mosquitto")
	if os.Getenv("PILOTHOUSE_TEST_MOSQUITTO") == "" || src == "" || err != nil {
		return nil, false
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("reading PILOTHOUSE_TEST_MOSQUITTO_CONF: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		switch f := strings.Fields(l); {
		case len(f) > 0 && f[0] == "listener":
			_, port, _ := net.SplitHostPort(addr)
			l = "listener " + port + " 127.0.0.1"
		case len(f) > 0 && (f[0] == "persistence_location" || f[0] == "log_dest"):
			continue
		}
		lines = append(lines, l)
	}
	lines = append(lines, "persistence_location "+dir+"/", "log_dest file "+filepath.Join(dir, "mosquitto.log"))
	conf := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Mosquitto{t: t, bin: bin, conf: conf, log: filepath.Join(dir, "mosquitto.log"), Addr: addr,
		User: os.Getenv("PILOTHOUSE_TEST_MOSQUITTO_USER"), Password: os.Getenv("PILOTHOUSE_TEST_MOSQUITTO_PASSWORD")}
	m.Start()
	t.Cleanup(m.Stop)
	return m, true
}

// URL is the broker URL, tcp://host:port.
func (m *Mosquitto) URL() string { return "tcp://" + m.Addr }

// Start starts the process and waits (5 s at most) until it listens.
func (m *Mosquitto) Start() {
	m.t.Helper()
	m.cmd = exec.Command(m.bin, "-c", m.conf)
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("starting mosquitto: %v", err)
	}
	m.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(m.cmd, m.exited)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", m.Addr)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-m.exited:
			log, _ := os.ReadFile(m.log)
			m.t.Fatalf("mosquitto exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("mosquitto does not listen on %s after 5 s", m.Addr)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// Stop ends the process with SIGTERM (Mosquitto saves its persistence
// then) and waits for it to exit.
func (m *Mosquitto) Stop() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(5 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	m.cmd = nil
}

// Freeze stops the process (SIGSTOP): the kernel still accepts
// connections and buffers bytes, nothing is answered.
func (m *Mosquitto) Freeze() { _ = m.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw resumes it (SIGCONT).
func (m *Mosquitto) Thaw() { _ = m.cmd.Process.Signal(syscall.SIGCONT) }
