package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"
)

// runsOpts are pilothouse runs' flags.
type runsOpts struct {
	cn                        conn
	rule, status, kind, since string
	limit                     int
}

func (o *runsOpts) register(fs *flag.FlagSet) {
	o.cn.register(fs)
	fs.StringVar(&o.rule, "rule", "", "only this rule's runs")
	fs.StringVar(&o.status, "status", "", "only runs that ended so (success, failed, cancelled...)")
	fs.StringVar(&o.kind, "kind", "", "only firing, deploy, test or manual runs")
	fs.StringVar(&o.since, "since", "", "only runs started since this time (RFC 3339) or this long ago (10m, 2h)")
	fs.IntVar(&o.limit, "limit", 20, fmt.Sprintf("at most this many runs (1 to %d)", maxRunsListed))
}

// query is the house API's query for the flags; since is relative to now.
func (o *runsOpts) query(now time.Time) (url.Values, error) {
	q := url.Values{}
	for k, v := range map[string]string{"rule": o.rule, "status": o.status, "kind": o.kind} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.limit < 1 || o.limit > maxRunsListed {
		return nil, fmt.Errorf("--limit %d: want 1 to %d", o.limit, maxRunsListed)
	}
	q.Set("limit", strconv.Itoa(o.limit))
	if o.since != "" {
		t, err := time.Parse(time.RFC3339, o.since)
		if err != nil {
			d, derr := time.ParseDuration(o.since)
			if derr != nil || d < 0 {
				return nil, fmt.Errorf("--since %q: want a time (RFC 3339, e.g. 2026-01-15T07:00:00+01:00) or a duration back from now (10m, 2h)", o.since)
			}
			t = now.Add(-d)
		}
		q.Set("since", t.Format(time.RFC3339))
	}
	return q, nil
}

// cliRuns lists runs, newest first, their times in the house's zone.
func cliRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	var o runsOpts
	o.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		c, _ := lookupCommand("runs")
		return errors.New("usage: pilothouse runs " + c.args)
	}
	q, err := o.query(time.Now())
	if err != nil {
		return err
	}
	var res struct {
		TimeZone string   `json:"time_zone"`
		Runs     []apiRun `json:"runs"`
	}
	if err := o.cn.api(ctx, http.MethodGet, "runs", q, nil, &res); err != nil {
		return err
	}
	if len(res.Runs) == 0 {
		fmt.Fprintln(stdout, "no runs")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STARTED (%s)\tKIND\tSTATUS\tRULE\tRUN\n", res.TimeZone)
	for _, r := range res.Runs {
		rule := r.Rule
		if rule == "" {
			rule = "-"
		}
		// The server sends the times in the house's zone: print them as sent.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Started.Format("2006-01-02 15:04:05"), r.Kind, r.Status, rule, r.ID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "(pilothouse trace RUN shows one)")
	return nil
}
