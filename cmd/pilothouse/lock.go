package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// One house per data folder: the process that runs a house holds an
// exclusive lock (flock) on a file in its data folder for its whole life.
// The lock, not an answer to a health check, is the truth: a serve that is
// busy (GC, a slow disk, a frozen lock) still holds it, so a second serve
// refuses and pilothouse stdio bridges to it instead of starting a second
// engine on the same SQLite files and broker. The kernel releases the lock
// when the process dies, however it dies.

// lockFile is the lock's file in the data folder. It is never removed (a
// removed lock file lets two processes lock two different files).
const lockFile = "pilothouse.lock"

// lockHolder is what the holder writes into the lock file, so that the
// others can name it.
type lockHolder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"` // serve or stdio
	Started time.Time `json:"started"`
}

// houseLock is a held lock on a data folder: on the folder itself, which
// removing the lock file cannot undo, and on the lock file, which names
// the holder.
type houseLock struct{ dir, f *os.File }

// errHeld: another process holds the data folder's lock.
var errHeld = errors.New("the data folder is locked by another pilothouse")

// lockHouse takes the lock of dir without waiting (errHeld when another
// process holds it) and writes who holds it. Writing that may fail on a
// full disk: the lock holds all the same, and the file is emptied rather
// than left naming an earlier holder.
func lockHouse(dir, command string, log *slog.Logger) (*houseLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the data folder %s: %w", dir, err)
	}
	d, err := flockOpen(dir, os.O_RDONLY, dir)
	if err != nil {
		return nil, err
	}
	f, err := flockOpen(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, dir)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	b, _ := json.Marshal(lockHolder{PID: os.Getpid(), Command: command, Started: time.Now().UTC()})
	b = append(b, '\n')
	if _, err := f.WriteAt(b, 0); err != nil {
		_ = f.Truncate(0)
		log.Warn("could not write this process's id into the data folder's lock (the lock holds)", "file", f.Name(), "err", err)
	} else {
		_ = f.Truncate(int64(len(b)))
	}
	return &houseLock{dir: d, f: f}, nil
}

// flockOpen opens name and takes its exclusive lock without waiting
// (errHeld when another process holds it).
func flockOpen(name string, flag int, dir string) (*os.File, error) {
	f, err := os.OpenFile(name, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the lock of the data folder %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errHeld
		}
		return nil, fmt.Errorf("locking the data folder %s: %w", dir, err)
	}
	return f, nil
}

// release lets the next process run the house.
func (l *houseLock) release() {
	if l != nil {
		_ = l.f.Close()
		_ = l.dir.Close()
	}
}

// readHolder reads who holds dir's lock (zero when it cannot tell).
func readHolder(dir string) lockHolder {
	var h lockHolder
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	if err == nil {
		_ = json.Unmarshal(b, &h)
	}
	return h
}

// heldError says who runs the house in dir, for a process that may not.
func heldError(dir string, h lockHolder) error {
	who := "pid unknown"
	if h.PID != 0 {
		who = fmt.Sprintf("pid %d, pilothouse %s", h.PID, h.Command)
	}
	if ep, err := readEndpoint(dir); err == nil && h.PID != 0 && ep.PID == h.PID {
		who += " at " + ep.MCP
	}
	hint := ""
	if h.Command == "stdio" {
		hint = " (a house run by pilothouse stdio has no endpoint to bridge to: run pilothouse serve, and every stdio bridges to it)"
	}
	return fmt.Errorf("another pilothouse (%s) already serves the data folder %s: stop it first, or pass --data to run another house%s", who, dir, hint)
}

// houseOrHolder takes dir's lock (the caller then runs the house), or finds
// the serve that holds it and says where it answers. A holder that has not
// announced itself yet (a serve starting) is waited for, up to wait; the
// lock is tried again meanwhile, in case the holder stops. A house run by
// pilothouse stdio has nothing to bridge to: that is an error at once.
func houseOrHolder(ctx context.Context, dir string, wait time.Duration, log *slog.Logger) (*houseLock, endpoint, error) {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for logged := false; ; {
		l, err := lockHouse(dir, "stdio", log)
		if !errors.Is(err, errHeld) {
			return l, endpoint{}, err
		}
		h := readHolder(dir)
		if ep, err := readEndpoint(dir); err == nil && h.PID != 0 && ep.PID == h.PID && ep.MCP != "" {
			return nil, ep, nil
		}
		if h.Command == "stdio" || wait > 0 && time.Now().After(deadline) {
			return nil, endpoint{}, heldError(dir, h)
		}
		if !logged {
			log.Info("the house is run by another process that has not said where it answers yet: waiting", "data", dir, "pid", h.PID, "for", wait)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, endpoint{}, ctx.Err()
		case <-tick.C:
		}
	}
}
