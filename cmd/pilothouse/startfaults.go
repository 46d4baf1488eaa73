package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// A full disk must not keep the house from starting (rules armed, firings
// running, the refusals visible), as it does not stop a running one. Of the
// writes a start makes, only opening the database is fatal: SQLite that
// cannot open has no rules to arm and nowhere to record anything, so the
// error says the disk is full and how to recover. The others degrade: the
// lock's pid (lockHouse), the firings the last stop interrupted (the
// engine), state history (the engine counts it) and where this serve
// answers (announce, retried here).

// announceRetry is how often a serve that could not say where it answers
// tries again.
const announceRetry = 10 * time.Second

// announceState is the endpoint file's status for /healthz.
type announceState struct {
	mu    sync.Mutex
	tried bool
	err   string // "" = written
}

// endpointHealth is the endpoint file's status on /healthz.
type endpointHealth struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// health is nil before the first try (no HTTP, or not yet announced).
func (s *announceState) health() *endpointHealth {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tried {
		return nil
	}
	return &endpointHealth{OK: s.err == "", Error: s.err}
}

// announce writes the endpoint file of a serving app, removed when it
// stops. When it cannot (a full disk), the house runs all the same: the
// failure is on /healthz and in the log, and it is tried again every
// announceRetry, so pilothouse stdio finds the serve once there is room.
func (a *app) announce() {
	base := localURL(a.ln.Addr())
	ep := endpoint{PID: os.Getpid(), MCP: base + "/mcp", Health: base + "/healthz", Token: a.localToken, Instance: a.instance, Started: time.Now().UTC()}
	dir, inst := a.cfg.DataDir, a.instance
	a.stops = append(a.stops, func() { removeEndpoint(dir, inst) })
	if a.tryAnnounce(ep) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(announceRetry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if a.tryAnnounce(ep) {
					return
				}
			}
		}
	}()
	a.stops = append(a.stops, func() { cancel(); <-done })
}

// tryAnnounce writes the endpoint file once, noting and logging how it went.
func (a *app) tryAnnounce(ep endpoint) bool {
	err := writeEndpoint(a.cfg.DataDir, ep)
	a.announced.mu.Lock()
	failedBefore := a.announced.err != ""
	a.announced.tried, a.announced.err = true, ""
	if err != nil {
		a.announced.err = fmt.Sprintf("writing %s in the data folder: %v", endpointFile, err)
	}
	a.announced.mu.Unlock()
	switch {
	case err != nil && !failedBefore:
		a.log.Error("could not say in the data folder where this server answers: the house runs, but pilothouse stdio cannot find it; trying again every "+
			announceRetry.String()+freeSpaceNote(a.cfg.DataDir), "err", err)
	case err == nil && failedBefore:
		a.log.Info("said in the data folder where this server answers", "file", endpointFile)
	}
	return err == nil
}

// freeSpaceNote is a sentence saying the data folder's disk is full, when it
// is ("" otherwise, or when it cannot tell).
func freeSpaceNote(dir string) string {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return ""
	}
	if free := st.Bavail * uint64(st.Bsize); free < 1<<20 {
		return fmt.Sprintf(" (the disk holding %s is full: %d bytes free)", dir, free)
	}
	return ""
}
