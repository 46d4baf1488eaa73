package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// oversizeClients are the ways a client sends a body over the bound: with a
// Content-Length or chunked, from Go's client, from a client that writes the
// whole request before it reads, and from Node's fetch when node is here.
var oversizeClients = []struct {
	name string
	post func(t *testing.T, url string, body []byte) (int, string, error)
}{
	{"go content-length", func(t *testing.T, url string, body []byte) (int, string, error) {
		return goPost(url, bytes.NewReader(body))
	}},
	{"go chunked", func(t *testing.T, url string, body []byte) (int, string, error) {
		return goPost(url, io.MultiReader(bytes.NewReader(body))) // no length: chunked
	}},
	{"write all, then read", writeThenRead},
	{"node fetch", nodeFetch},
}

func goPost(url string, body io.Reader) (int, string, error) {
	resp, err := http.Post(url, "application/json", body)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// writeThenRead is a plain client that writes its whole request before it
// reads the answer.
func writeThenRead(t *testing.T, url string, body []byte) (int, string, error) {
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	if _, err := conn.Write(append([]byte(head), body...)); err != nil {
		return 0, "", fmt.Errorf("writing the request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func nodeFetch(t *testing.T, url string, body []byte) (int, string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: Node's fetch not tried")
	}
	script := `const n = +process.argv[2];
fetch(process.argv[1], {method: "POST", headers: {"content-type": "application/json", accept: "application/json, text/event-stream"}, body: "x".repeat(n)})
  .then(async r => { console.log(r.status); console.log(await r.text()); })
  .catch(e => { console.log(0); console.log(String(e) + " " + String(e.cause)); });`
	out, err := exec.Command(node, "-e", script, url, fmt.Sprint(len(body))).Output()
	if err != nil {
		return 0, "", err
	}
	status, text, _ := strings.Cut(string(out), "\n")
	var code int
	_, _ = fmt.Sscan(status, &code)
	if code == 0 {
		return 0, "", fmt.Errorf("node: %s", text)
	}
	return code, text, nil
}

// TestOversizedBodyAnswered413: a client sending a body over
// limits.max_request_bytes reads the 413 and a JSON-RPC error naming the
// limit, not a reset connection.
func TestOversizedBodyAnswered413(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	url := a.URL() + "/mcp"
	limit := a.cfg.Limits.MaxRequestBytes
	for _, size := range []int{limit + 1, 2 * limit, 6 * limit} {
		body := bytes.Repeat([]byte("x"), size)
		for _, c := range oversizeClients {
			t.Run(fmt.Sprintf("%s/%d", c.name, size), func(t *testing.T) {
				code, text, err := c.post(t, url, body)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				var rpc struct {
					JSONRPC string `json:"jsonrpc"`
					Error   struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if code != http.StatusRequestEntityTooLarge || json.Unmarshal([]byte(text), &rpc) != nil || rpc.JSONRPC != "2.0" ||
					!strings.Contains(rpc.Error.Message, "limits.max_request_bytes") {
					t.Fatalf("status %d %q, want 413 with a JSON-RPC error naming limits.max_request_bytes", code, text)
				}
			})
		}
	}
}
