package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
)

// frontDoor is the HTTP handler from the moment the port is open: until
// the house is up (ready), /healthz answers 503 "starting: N configs read"
// and every other path 503 with Retry-After, so that a health check or a
// client waiting through a long start (thousands of retained discovery
// configs on the broker) sees progress instead of a closed port.
type frontDoor struct {
	ready    atomic.Pointer[http.Handler]
	catalog  atomic.Pointer[devices.Catalog] // once made: its configs read
	instance string
}

func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := f.ready.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	var read int64
	if c := f.catalog.Load(); c != nil {
		read = c.ConfigsRead()
	}
	status := fmt.Sprintf("starting: %d configs read", read)
	w.Header().Set("Retry-After", "1")
	if r.URL.Path != "/healthz" {
		http.Error(w, "pilothouse is "+status+"; try again in a moment", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": status, "version": engine.Version, "instance": f.instance})
}

// open hands every request to h from now on.
func (f *frontDoor) open(h http.Handler) { f.ready.Store(&h) }
