package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfigFile: any bytes either load or fail with a located error; the
// loader never panics.
func FuzzConfigFile(f *testing.F) {
	for _, name := range []string{"pilothouse.yaml", "pilothouse-mosquitto.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "examples", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("mqtt: {brokr: x}\n"))
	f.Add([]byte("principals:\n  - name: a\n    scope: {kinds: [state]}\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"))
	f.Add([]byte("limits: {max_steps: 99999999999999999999}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := defaultConfig()
		err := parseConfigYAML("f.yaml", b, c, io.Discard)
		if err != nil && !strings.HasPrefix(err.Error(), "config f.yaml") {
			t.Fatalf("error without location: %v", err)
		}
	})
}
