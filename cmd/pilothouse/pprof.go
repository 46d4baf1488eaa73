//go:build pprof

package main

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// With -tags pprof, PILOTHOUSE_PPROF=host:port serves net/http/pprof there
// (profiles and runtime traces of a running server, e.g. in the peer bench:
// curl host:port/debug/pprof/profile?seconds=10). Never in a release build.
func init() {
	addr := os.Getenv("PILOTHOUSE_PPROF")
	if addr == "" {
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			slog.Error("pprof listener", "addr", addr, "err", err)
		}
	}()
}
