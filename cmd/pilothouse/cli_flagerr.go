package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/rules"
)

// parseFlagSet parses args into fs. A mistaken flag gets one short error
// naming the closest flag of the command instead of the whole flag list
// ("unknown flag --http: did you mean --addr?"); -h still prints the
// command's usage.
func parseFlagSet(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		_, _ = out.Write(buf.Bytes())
		return err
	}
	return flagError(fs, err)
}

// flagSynonyms are names other servers give the flags a new user looks
// for: the web port is --addr, the data folder --data, the zone --tz.
var flagSynonyms = map[string]string{
	"http": "addr", "port": "addr", "listen": "addr", "bind": "addr", "host": "addr", "address": "addr",
	"http-addr": "addr", "web": "addr", "web-port": "addr", "http-port": "addr",
	"datadir": "data", "data-dir": "data", "dir": "data", "db": "data",
	"timezone": "tz", "time-zone": "tz", "zone": "tz",
}

// flagError is the short form of a flag error: what was wrong, the
// closest flag of the command (by the table's flag set), and where the
// whole list is.
func flagError(fs *flag.FlagSet, err error) error {
	cmd := cmp.Or(fs.Name(), "pilothouse")
	list := fmt.Sprintf("`%s -h` lists its flags", cmd)
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return fmt.Errorf("%w (%s)", err, list)
	}
	name = strings.TrimLeft(name, "-")
	var known []string
	fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
	var near []string
	if s, ok := flagSynonyms[strings.ToLower(name)]; ok && fs.Lookup(s) != nil {
		near = []string{s}
	} else {
		near = rules.CloseMatches(name, known, 2)
	}
	if len(near) == 0 {
		return fmt.Errorf("%s has no flag --%s (%s)", cmd, name, list)
	}
	for i, n := range near {
		near[i] = "--" + n
	}
	use := fs.Lookup(near[0][2:]).Usage
	if len(use) > 80 { // its first words: the rest is in -h
		use, _, _ = strings.Cut(use, " (")
	}
	return fmt.Errorf("%s has no flag --%s: did you mean %s? (%s: %s; %s)", cmd, name, strings.Join(near, " or "), near[0], use, list)
}
