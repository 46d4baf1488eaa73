package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pilothouse/pilothouse/storage"
)

// clientIDFile holds the MQTT client id a data folder's server uses when
// none is configured: two servers on one broker (the demo tried beside a
// real house) must not share one, or each takes the other's session and
// messages are lost meanwhile.
const clientIDFile = "mqtt-client-id"

// legacyClientID is the id every server used before ids were per folder;
// a folder that already holds a database keeps it, and so keeps the
// persistent session the broker holds for it.
const legacyClientID = "pilothouse"

// folderIsNew reports whether the data folder has no database yet; call it
// before the store is opened.
func folderIsNew(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, storage.FileName))
	return errors.Is(err, fs.ErrNotExist)
}

// folderClientID returns the data folder's own client id, making it on
// first use: legacyClientID for a folder from before (fresh false), else
// "pilothouse-" and six random hex digits.
func folderClientID(dir string, fresh bool) (string, error) {
	path := filepath.Join(dir, clientIDFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if id := strings.TrimSpace(string(b)); id != "" && len(id) <= 64 {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the MQTT client id from %s: %w", path, err)
	}
	id := legacyClientID
	if fresh {
		id += "-" + randomHex(3)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keeping the MQTT client id in %s (or give --mqtt-client-id): %w", path, err)
	}
	return id, nil
}
