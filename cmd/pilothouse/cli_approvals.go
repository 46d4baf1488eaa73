package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/pilotclient"
)

// The server holds a risky deploy until a human approves it outside the
// model. `pilothouse approvals` lists the requests waiting, `approve ID`
// and `decline ID` decide one, through the web UI's approvals API (not
// MCP, which the model speaks) with the CLI's bearer token.

// listApprovals reads the requests waiting (all: every recent one).
func (c *conn) listApprovals(ctx context.Context, all bool) ([]pilotage.Approval, error) {
	var out struct{ Approvals []pilotage.Approval }
	var q url.Values
	if all {
		q = url.Values{"all": {"1"}}
	}
	err := c.api(ctx, http.MethodGet, "approvals", q, nil, &out)
	return out.Approvals, err
}

// decideApproval approves or declines request id.
func (c *conn) decideApproval(ctx context.Context, id string, approve bool) (pilotage.Approval, error) {
	verb := "decline"
	if approve {
		verb = "approve"
	}
	var out struct{ Approval pilotage.Approval }
	err := c.api(ctx, http.MethodPost, "approvals/"+url.PathEscape(id)+"/"+verb, nil, nil, &out)
	return out.Approval, err
}

// cliApprovals lists the requests waiting for a decision (--all: every
// recent one).
func cliApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("approvals", stderr)
	var cn conn
	cn.register(fs)
	all := fs.Bool("all", false, "also list decided, used and expired requests")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	list, err := cn.listApprovals(ctx, *all)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no deploys are waiting for approval")
		return nil
	}
	loc := cn.houseZone(ctx)
	for _, a := range list {
		fmt.Fprintf(stdout, "%s  %-8s  rule %s by %s, risk %s, until %s\n    %s\n", a.ID, a.Status, a.Rule, a.Principal, a.Risk,
			houseTime(a.ExpiresAt, loc), a.URL)
	}
	return nil
}

// cliDecide approves or declines one request.
func cliDecide(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(verb, stderr)
	var cn conn
	cn.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: pilothouse %s ID [--server URL] [--token T]", verb)
	}
	a, err := cn.decideApproval(ctx, pos[0], verb == "approve")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s by %s (rule %s, requested by %s)\n", a.ID, a.Status, a.DecidedBy, a.Rule, a.Principal)
	if a.Status == "approved" {
		fmt.Fprintln(stdout, "the same deploy, sent again before "+houseTime(a.ExpiresAt, cn.houseZone(ctx))+", installs it")
	}
	return nil
}

// applyApproval is apply's answer to a deploy the server held for
// approval: the terminal's human, asked already (approved) or now, decides
// it through the approvals API, and an approved deploy is sent again.
func applyApproval(cn conn, stdout io.Writer, in *bufio.Reader, approved *bool) func(ctx context.Context, r *pilotclient.ExecuteResult) (bool, error) {
	return func(ctx context.Context, r *pilotclient.ExecuteResult) (bool, error) {
		if r.Approval == nil {
			return false, nil
		}
		fmt.Fprintf(stdout, "the server holds this deploy for approval (%s, risk %s): %s\n", r.Approval.ID, r.Approval.Risk, r.Approval.URL)
		if !*approved {
			fmt.Fprint(stdout, "Approve it? [y/N] ")
			line, _ := in.ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				return false, nil
			}
		}
		a, err := cn.decideApproval(ctx, r.Approval.ID, true)
		if err != nil {
			return false, fmt.Errorf("approving %s: %w", r.Approval.ID, err)
		}
		fmt.Fprintf(stdout, "approved %s as %s\n", a.ID, a.DecidedBy)
		return true, nil
	}
}
