package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/pilotclient"
)

// The server holds a risky deploy until a human approves it outside the
// model. `pilothouse approvals` lists the requests waiting, `approve ID`
// and `decline ID` decide one, through the web UI's approvals API (not
// MCP, which the model speaks) with the CLI's bearer token.

// approvalsAPI reaches the approvals API of the server whose MCP endpoint
// is server.
type approvalsAPI struct {
	base, token string
	hc          *http.Client
}

func (c *conn) approvals() (*approvalsAPI, error) {
	c.resolve()
	u, err := url.Parse(c.server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not a URL", c.server)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/mcp")
	return &approvalsAPI{base: strings.TrimSuffix(u.String(), "/"), token: c.token, hc: &http.Client{Timeout: 30 * time.Second}}, nil
}

// do sends one request and decodes the answer into out.
func (a *approvalsAPI) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, nil)
	if err != nil {
		return err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("reaching the server's approvals API: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("reading the approvals API's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("approvals API: %s", resp.Status)
	}
	return json.Unmarshal(body, out)
}

func (a *approvalsAPI) list(ctx context.Context, all bool) ([]pilotage.Approval, error) {
	var out struct{ Approvals []pilotage.Approval }
	path := "/api/approvals"
	if all {
		path += "?all=1"
	}
	err := a.do(ctx, http.MethodGet, path, &out)
	return out.Approvals, err
}

func (a *approvalsAPI) decide(ctx context.Context, id string, approve bool) (pilotage.Approval, error) {
	verb := "decline"
	if approve {
		verb = "approve"
	}
	var out struct{ Approval pilotage.Approval }
	err := a.do(ctx, http.MethodPost, "/api/approvals/"+url.PathEscape(id)+"/"+verb, &out)
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
	api, err := cn.approvals()
	if err != nil {
		return err
	}
	list, err := api.list(ctx, *all)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no deploys are waiting for approval")
		return nil
	}
	for _, a := range list {
		fmt.Fprintf(stdout, "%s  %-8s  rule %s by %s, risk %s, until %s\n    %s\n", a.ID, a.Status, a.Rule, a.Principal, a.Risk,
			a.ExpiresAt.Local().Format("15:04"), a.URL)
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
	api, err := cn.approvals()
	if err != nil {
		return err
	}
	a, err := api.decide(ctx, pos[0], verb == "approve")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s by %s (rule %s, requested by %s)\n", a.ID, a.Status, a.DecidedBy, a.Rule, a.Principal)
	if a.Status == "approved" {
		fmt.Fprintln(stdout, "the same deploy, sent again before "+a.ExpiresAt.Local().Format("15:04")+", installs it")
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
		api, err := cn.approvals()
		if err != nil {
			return false, err
		}
		a, err := api.decide(ctx, r.Approval.ID, true)
		if err != nil {
			return false, fmt.Errorf("approving %s: %w", r.Approval.ID, err)
		}
		fmt.Fprintf(stdout, "approved %s as %s\n", a.ID, a.DecidedBy)
		return true, nil
	}
}
