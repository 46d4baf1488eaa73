// Package zones resolves the house's time zone: a name from the IANA
// database (with the closest names suggested for a wrong one), or the
// system's.
package zones

import (
	"archive/zip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

// maxZoneNames bounds the names zoneNames reads (the database has about
// 600 zones and links).
const maxZoneNames = 4000

// Load is time.LoadLocation whose error suggests the closest IANA
// names (unknown IANA time zone "Europe/Pari"; did you mean
// "Europe/Paris"?).
func Load(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err == nil {
		return loc, nil
	}
	msg := fmt.Sprintf("unknown IANA time zone %q", name)
	if near := rules.CloseMatches(name, zoneNames(), 3); len(near) > 0 {
		msg += "; " + rules.HintFor(near)
	} else {
		msg += "; names look like Europe/Paris or America/New_York"
	}
	return nil, errors.New(msg)
}

// Check checks a configuration file's time_zone.
func Check(s string) error {
	if s == "" {
		return errors.New("want an IANA time zone, e.g. Europe/Paris")
	}
	_, err := Load(s)
	return err
}

// zoneNames lists the zone names of the time zone database on this
// machine, offline: the folder Go reads zones from ($ZONEINFO, a folder or
// Go's zip; else /usr/share/zoneinfo), at most maxZoneNames; nil when
// there is none.
func zoneNames() []string {
	if z := os.Getenv("ZONEINFO"); z != "" {
		if st, err := os.Stat(z); err == nil && !st.IsDir() {
			return zipZoneNames(z)
		}
		return dirZoneNames(z)
	}
	for _, dir := range []string{"/usr/share/zoneinfo", "/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ"} {
		if names := dirZoneNames(dir); len(names) > 0 {
			return names
		}
	}
	return nil
}

// dirZoneNames walks a zoneinfo folder: zone names are the paths of its
// files whose first letter is upper case (Europe/Paris, UTC), not the
// tables (zone1970.tab) nor the posix/ and right/ copies.
func dirZoneNames(dir string) []string {
	var names []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case len(names) >= maxZoneNames:
			return fs.SkipAll
		case err != nil:
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if c := d.Name()[0]; c < 'A' || c > 'Z' || rel == "posix" || rel == "right" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	return names
}

// zipZoneNames lists the zones of a zip like Go's lib/time/zoneinfo.zip.
func zipZoneNames(file string) []string {
	r, err := zip.OpenReader(file)
	if err != nil {
		return nil
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		if len(names) >= maxZoneNames {
			break
		}
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	return names
}
