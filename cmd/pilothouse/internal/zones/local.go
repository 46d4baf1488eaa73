package zones

import (
	"os"
	"strings"
	"time"
)

// System is the machine's time zone by its IANA name when one can be
// found that agrees with it (TZ, the /etc/localtime link, /etc/timezone),
// else time.Local. A name is what browsers need to draw charts in the
// house's zone rather than their own; time.Local has none ("Local").
func System() *time.Location {
	link, _ := os.Readlink("/etc/localtime")
	file, _ := os.ReadFile("/etc/timezone")
	tz, tzSet := os.LookupEnv("TZ")
	return zoneByName(tz, tzSet, link, string(file), time.Local)
}

// zoneByName is systemZone's choice among the candidates' names: the first
// that loads and keeps local's offsets (now and in half a year, across a
// daylight-saving change), else local.
func zoneByName(tz string, tzSet bool, link, file string, local *time.Location) *time.Location {
	var names []string
	switch {
	case tzSet && tz == "":
		names = append(names, "UTC") // TZ="" is UTC to Go and libc
	case tzSet:
		names = append(names, strings.TrimPrefix(tz, ":"))
	}
	if _, name, ok := strings.Cut(link, "zoneinfo/"); ok {
		names = append(names, name)
	}
	names = append(names, strings.TrimSpace(file))
	now := time.Now()
	for _, n := range names {
		if n == "" || n == "Local" || strings.HasPrefix(n, "/") {
			continue
		}
		loc, err := time.LoadLocation(n)
		if err == nil && sameOffsets(loc, local, now) {
			return loc
		}
	}
	return local
}

func sameOffsets(a, b *time.Location, now time.Time) bool {
	for _, t := range []time.Time{now, now.AddDate(0, 6, 0)} {
		_, oa := t.In(a).Zone()
		_, ob := t.In(b).Zone()
		if oa != ob {
			return false
		}
	}
	return true
}
