package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/pilotclient"
)

// lookupOpts are pilothouse lookup's flags.
type lookupOpts struct {
	cn        conn
	kind, tag string
	limit     int
}

func (o *lookupOpts) register(fs *flag.FlagSet) {
	o.cn.register(fs)
	fs.StringVar(&o.kind, "kind", "", "only entries of this kind: state, event, action …")
	fs.StringVar(&o.tag, "tag", "", "only entries with this tag, e.g. area:hall or type:light")
	fs.IntVar(&o.limit, "limit", 50, "list at most this many (the server allows up to 500)")
}

// cliLookup lists the catalog entries the token may see (pilotage_lookup
// list): ids to write in a rule, with their kind and name; an entry's id
// (hall_light.set) shows that entry: its arguments and live value.
func cliLookup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("lookup", stderr)
	var o lookupOpts
	o.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return errors.New("usage: pilothouse lookup [PART_OF_A_NAME] [--kind K] [--tag area:X] [--limit N]")
	}
	q := strings.Join(pos, "")
	c, err := o.cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if g, err := c.Get(ctx, q); q != "" && err == nil && g.Entry != nil {
		printEntry(stdout, g)
		return nil
	}
	res, err := c.List(ctx, pilotclient.ListOptions{Q: q, Kind: o.kind, Tag: o.tag, Limit: min(max(o.limit, 1), 500)})
	if err != nil {
		return err
	}
	if len(res.Items) == 0 {
		fmt.Fprintln(stdout, "no catalog entry visible to this token matches")
		return nil
	}
	for _, e := range res.Items {
		line := fmt.Sprintf("%-36s %-8s %s", e.ID, e.Kind, e.Name)
		if e.Callable {
			line += fmt.Sprintf(" (callable, risk %s)", e.Risk)
		}
		fmt.Fprintln(stdout, strings.TrimRight(line, " "))
	}
	if res.NextCursor != "" {
		fmt.Fprintf(stdout, "… more: narrow the search (pilothouse lookup PART_OF_A_NAME, --kind, --tag) or raise --limit\n")
	}
	return nil
}

// printEntry shows one entry: what it is, its arguments (input schema)
// and its live value.
func printEntry(w io.Writer, g *pilotclient.GetResult) {
	e := g.Entry
	fmt.Fprintf(w, "%s  %s  %s\n", e.ID, e.Kind, e.Name)
	if e.Description != "" {
		fmt.Fprintf(w, "  %s\n", e.Description)
	}
	if e.Callable {
		fmt.Fprintf(w, "  callable, risk %s%s\n", e.Risk, hintWords(e.RiskHints))
	}
	if len(e.Tags) > 0 {
		fmt.Fprintf(w, "  tags: %s\n", strings.Join(e.Tags, ", "))
	}
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(e.InputSchema, &sch) == nil && len(sch.Properties) > 0 {
		names := slices.Sorted(maps.Keys(sch.Properties))
		fmt.Fprintf(w, "  arguments: %s\n", strings.Join(names[:min(len(names), 40)], ", "))
	}
	var live pilotage.Live
	if json.Unmarshal(g.Live, &live) == nil && (live.Value != nil || live.Available != nil) {
		line := "  live: " + clipText(compactAny(live.Value))
		if live.Available != nil && !*live.Available {
			line += " (its device says it is offline)"
		}
		fmt.Fprintln(w, line)
	}
}

// lookupHints turn the validator's hints, which name the MCP tool
// pilotage_lookup, into the command line's own command.
var lookupHints = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`pilotage_lookup \(verb list, q = part of the name\)`), "`pilothouse lookup PART_OF_THE_NAME`"},
	{regexp.MustCompile(`pilotage_lookup \(verb list, kind ([a-z_]+)\)`), "`pilothouse lookup --kind $1`"},
	{regexp.MustCompile(`pilotage_lookup list with tag "([^"]*)" or "([^"]*)"`), "`pilothouse lookup --tag $1` or `--tag $2`"},
	{regexp.MustCompile(`pilotage_lookup get`), "`pilothouse lookup ID`"},
	{regexp.MustCompile(`pilotage_lookup`), "`pilothouse lookup`"},
}

// cliHint is a diagnostic's hint as the command line says it.
func cliHint(h string) string {
	if !strings.Contains(h, "pilotage_lookup") {
		return h
	}
	for _, r := range lookupHints {
		h = r.re.ReplaceAllString(h, r.with)
	}
	return h
}
