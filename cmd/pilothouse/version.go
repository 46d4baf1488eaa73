package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// versionString says which build this is: the server version, the module
// version (a tag with go install …@v1.2.3, "(devel)" from a checkout) and
// the version-control revision the binary was built from.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	return formatVersion(bi, ok)
}

func formatVersion(bi *debug.BuildInfo, ok bool) string {
	s := "pilothouse " + engine.Version
	if !ok {
		return s
	}
	var extra []string
	if v := bi.Main.Version; v != "" {
		extra = append(extra, "module "+v)
	}
	var rev, at, dirty string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			at = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		r := "revision " + rev
		if at != "" {
			r += " (" + at + dirty + ")"
		} else if dirty != "" {
			r += " (modified)"
		}
		extra = append(extra, r)
	}
	extra = append(extra, bi.GoVersion, "Pilotage "+pilotage.Version)
	return fmt.Sprintf("%s (%s)", s, strings.Join(extra, ", "))
}
