package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// readmeLine is one command of the README: a line of an indented block or
// of a ```sh block (continuations joined, comments dropped), with the
// compose-test marker of its block, if any.
type readmeLine struct {
	text, marker string
}

// readmeCommands reads the README's commands.
func readmeCommands(t *testing.T) []readmeLine {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeLine
	var fence, marker, pending string
	prevBlank := true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case fence == "" && strings.HasPrefix(l, "```"):
			fence = strings.TrimPrefix(l, "```")
			continue
		case fence != "" && l == "```":
			fence, marker = "", ""
			continue
		case fence == "" && strings.HasPrefix(l, "<!-- compose-test:"):
			marker = strings.Fields(l)[1]
		}
		indented := fence == "" && strings.HasPrefix(l, "    ") && (prevBlank || pending != "" || len(out) > 0 && out[len(out)-1].marker == "indented")
		prevBlank = strings.TrimSpace(l) == ""
		if fence != "sh" && !indented {
			continue
		}
		cmd := strings.TrimSpace(l)
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		if c, ok := strings.CutSuffix(cmd, "\\"); ok {
			pending += c
			continue
		}
		m := marker
		if indented {
			m = "indented"
		}
		out = append(out, readmeLine{text: pending + cmd, marker: m})
		pending = ""
	}
	return out
}

// readmeElsewhere are the README's commands this test cannot run (Docker,
// the whole test suite), each with the file that runs or checks it, which
// must hold the text given.
var readmeElsewhere = map[string][2]string{
	"go test -race ./...":                {".ci/run", "go test -race ./..."},
	"docker compose --profile sim up -d": {"cmd/pilothouse/compose_sim_test.go", "TestDockerComposeSimProfile"},
	"docker compose exec -T pilothouse /pilothouse apply /dev/stdin < examples/rules/hall-motion-light.json": {"deploy/compose-test.sh",
		"docker compose exec -T pilothouse /pilothouse apply /dev/stdin < examples/rules/hall-motion-light.json"},
	"docker compose exec pilothouse /pilothouse runs": {"cmd/pilothouse/readme_test.go", "the binary's runs, run below"},
	"KEEP_STANDINS=1 deploy/compose-test.sh":          {"deploy/compose-test.sh", `"${KEEP_STANDINS:-}" = 1`},
}

// shellWords splits a command line as sh would for the README's simple
// lines: quotes, and a # that starts a word begins a comment.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case r == '#' && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestREADMECommands runs every command of the README as a new user would,
// in order, with the binary its build line builds: each serve line starts
// a server (in a fresh per-user data folder; the example broker address is
// a local broker with the example's user and password), and the client
// lines after it must succeed; each quick start with the demo reaches a
// firing. The commands it cannot run must be run or checked by the file
// readmeElsewhere names.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	lines := readmeCommands(t)
	if len(lines) < 10 {
		t.Fatalf("found only %d commands in the README", len(lines))
	}
	broker, err := mqtt.StartBroker("127.0.0.1:0", quietLogger(), mqtt.WithBrokerUsers([]mqtt.BrokerUser{
		{Name: "pilothouse", Password: "...", Read: []string{"#"}, Write: []string{"#"}}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	phone := newPhone(t)
	r := &readmeRun{t: t, brokerAddr: broker.Addr(), phone: phone}
	var demoBlock []readmeLine
	for _, l := range lines {
		words := shellWords(l.text)
		switch {
		case l.marker == "compose-test:setup" || l.marker == "compose-test:up":
			r.checkFile("deploy/compose-test.sh", "readme_block '"+l.marker+"'", l.text)
		case words[0] == "go" && len(words) > 1 && words[1] == "build":
			r.build(words)
		case words[0] == "./pilothouse" && (len(words) == 1 || strings.HasPrefix(words[1], "-")):
			r.serve(words[1:])
			if r.demo && strings.Contains(l.text, "--broker") {
				for _, d := range demoBlock { // beside Mosquitto: "then apply, sim set and runs as above"
					r.client(shellWords(d.text))
				}
			}
		case words[0] == "./pilothouse":
			if r.serving == nil {
				t.Fatalf("README runs %q before any server is started", l.text)
			}
			if len(demoBlock) < 3 {
				demoBlock = append(demoBlock, l)
			}
			r.client(words)
		default:
			where, ok := readmeElsewhere[l.text]
			if !ok {
				t.Errorf("README command %q is neither run here nor listed in readmeElsewhere", l.text)
				continue
			}
			r.checkFile(where[0], where[1], l.text)
		}
	}
	if r.firings < 3 {
		t.Errorf("the README's quick starts reached %d firings, want one with the embedded broker, one beside the broker, one to the phone", r.firings)
	}
	if got := phone.received(); len(got) == 0 || got[0] != "Hall|Motion in the hall|high|house" {
		t.Errorf("the phone received %q, want the motion-notify rule's push", got)
	}
}

// phone is an ntfy server stand-in: the README's ntfy.sh URL is pointed
// at it, and it records title|message|priority|tags of each push.
type phone struct {
	mu  sync.Mutex
	got []string
	srv *httptest.Server
}

func newPhone(t *testing.T) *phone {
	p := &phone{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		p.mu.Lock()
		p.got = append(p.got, strings.Join([]string{r.Header.Get("Title"), string(b), r.Header.Get("Priority"), r.Header.Get("Tags")}, "|"))
		p.mu.Unlock()
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *phone) received() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

// readmeRun is the state of TestREADMECommands: the binary, the running
// server and what was seen.
type readmeRun struct {
	t          *testing.T
	brokerAddr string
	phone      *phone
	rule       string // the last rule applied
	bin        string
	env        []string
	serving    *exec.Cmd
	demo       bool
	firings    int
	startedAt  time.Time
}

func (r *readmeRun) checkFile(file, holds, line string) {
	b, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil || !strings.Contains(string(b), holds) {
		r.t.Errorf("README command %q: %s should run or check it (holding %q): %v", line, file, holds, err)
	}
}

func (r *readmeRun) build(words []string) {
	r.t.Helper()
	r.bin = filepath.Join(r.t.TempDir(), "pilothouse")
	args := append([]string(nil), words[1:]...)
	for i := range args {
		if args[i] == "-o" && i+1 < len(args) {
			args[i+1] = r.bin // the README builds into the clone; here into a temporary folder
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("go %v: %v\n%s", args, err, out)
	}
}

// serve stops the running server and starts the README's next one.
func (r *readmeRun) serve(args []string) {
	r.t.Helper()
	if r.bin == "" {
		r.t.Fatal("README runs ./pilothouse before building it")
	}
	if r.serving != nil {
		_ = r.serving.Process.Signal(os.Interrupt)
		_ = r.serving.Wait()
	}
	r.demo = true
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "192.168.1.10:1883", r.brokerAddr)
		if a == "--demo=false" {
			r.demo = false
		}
		if i > 0 && args[i-1] == "--config" {
			args[i] = r.localConfig(a)
		}
	}
	r.env = append(binEnv(r.t), "PILOTHOUSE_ADDR=127.0.0.1:0", "PILOTHOUSE_BROKER_LISTEN=127.0.0.1:0", "PILOTHOUSE_DEMO_PACE=1h")
	r.serving = exec.Command(r.bin, args...)
	r.serving.Env = r.env
	startLog(r.t, r.serving)
	r.startedAt = time.Now()
}

// localConfig is a copy of a README configuration file with ntfy.sh
// pointed at the test's phone.
func (r *readmeRun) localConfig(file string) string {
	b, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		r.t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("https://ntfy.sh/")) {
		return file
	}
	local := filepath.Join(r.t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(local, bytes.ReplaceAll(b, []byte("https://ntfy.sh/"), []byte(r.phone.srv.URL+"/")), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return local
}

// client runs a client command; after a sim set, runs must show the
// example rule's firing.
func (r *readmeRun) client(words []string) {
	r.t.Helper()
	out, errOut, err := runPH(r.t, r.bin, r.env, words[1:]...)
	if err != nil {
		r.t.Fatalf("README command %v: %v\n%s%s", words, err, out, errOut)
	}
	if words[1] == "apply" {
		var prog struct{ Name string }
		b, _ := os.ReadFile(filepath.Join(repoRoot, words[2]))
		_ = json.Unmarshal(b, &prog)
		r.rule = prog.Name
	}
	// A user runs it once, right after sim: the firing must be listed.
	if words[1] == "runs" && r.demo {
		if !regexp.MustCompile(`firing\s+success\s+` + regexp.QuoteMeta(r.rule) + `\s`).MatchString(out) {
			r.t.Fatalf("README command %v right after sim does not list the firing of %s:\n%s", words, r.rule, out)
		}
		r.firings++
		r.t.Logf("server up → firing listed: %s", time.Since(r.startedAt).Round(time.Millisecond))
	}
}
