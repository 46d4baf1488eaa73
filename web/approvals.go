package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// The approvals pages are where a human decides a risky deploy an
// assistant asked for (the link its answer carries): the program as
// written, the input it binds, the plan with bound arguments, the risk
// labels marked as the server's unverified claims (spec §7.3), and what it
// would replace, as a diff against the installed rule.

type approvalsData struct {
	List []pilotage.Approval
}

func (s *server) approvalsPage(w http.ResponseWriter, r *http.Request, ss *session) {
	list, err := s.e.ListApprovals(ss.ctx(r), false)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the approvals failed.", err)
		return
	}
	s.render(w, r, ss, "approvals", page{Title: "Approvals", Nav: "approvals", Data: approvalsData{List: list}})
}

type approvalData struct {
	A         engine.ApprovalDetail
	Program   string
	Params    string
	Diff      []diffLine
	ParamsWas string // the installed rule's input, when it differs
	// InstallNow: the viewer asked for it, it is approved and unused: the
	// page offers the deploy again (the editor's, with this program and
	// input; ReplaceRule when it replaces an installed rule).
	InstallNow  bool
	ReplaceRule string
}

func (s *server) approvalPage(w http.ResponseWriter, r *http.Request, ss *session) {
	d, err := s.e.GetApproval(ss.ctx(r), r.PathValue("id"))
	if errors.Is(err, engine.ErrApprovalNotFound) {
		s.fail(w, r, ss, http.StatusNotFound, "No approval request called "+r.PathValue("id")+".", nil)
		return
	}
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the approval request failed.", err)
		return
	}
	data := approvalData{A: d, Program: prettyJSON(d.Program), Params: prettyJSON(orEmptyObject(d.Params))}
	data.InstallNow = d.Status == "approved" && d.UsedRun == "" && d.Principal == ss.principal.Name && ss.principal.Deploy
	if d.Installed != nil {
		data.ReplaceRule = d.Rule
		data.Diff = lineDiff(prettyJSON(d.Installed), data.Program)
		if was := prettyJSON(orEmptyObject(d.InstalledParams)); was != data.Params {
			data.ParamsWas = was
		}
	}
	s.render(w, r, ss, "approval", page{Title: "Approve " + d.Rule + "?", Nav: "approvals", Data: data})
}

func orEmptyObject(raw []byte) []byte {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return []byte("{}")
	}
	return raw
}

func (s *server) approvalAction(w http.ResponseWriter, r *http.Request, ss *session) {
	id, verb := r.PathValue("id"), r.PathValue("verb")
	if verb != "approve" && verb != "decline" {
		s.fail(w, r, ss, http.StatusNotFound, "Unknown action.", nil)
		return
	}
	a, err := s.e.DecideApproval(ss.ctx(r), id, verb == "approve", engine.ChannelWeb)
	if err != nil {
		code, msg := decideError(err)
		s.fail(w, r, ss, code, "Could not "+verb+" "+id+": "+msg+".", errUnlessInternal(code, err))
		return
	}
	switch {
	case a.Status == "approved" && a.Principal == ss.principal.Name:
		ss.setFlash("Approved. Install it now (below), or deploy it again before " + s.clock.when(a.ExpiresAt) + ".")
	case a.Status == "approved":
		ss.setFlash("Approved. " + a.Principal + "'s next try of this deploy installs it (until " + s.clock.when(a.ExpiresAt) + "); if an assistant asked, tell it to try again.")
	default:
		ss.setFlash("Declined. Nothing was installed.")
	}
	redirect(w, r, "/approvals/"+url.PathEscape(id))
}

// errUnlessInternal passes err to fail only for a 500 (logged there).
func errUnlessInternal(code int, err error) error {
	if code == http.StatusInternalServerError {
		return err
	}
	return nil
}

// diffLine is one line of a diff: Op is ' ', '-' or '+'.
type diffLine struct {
	Op   string
	Text string
}

// maxDiffCells bounds the diff's work (lines × lines); past it both
// versions are shown whole, marked removed and added.
const maxDiffCells = 1 << 20

// lineDiff is a longest-common-subsequence diff of a and b by lines.
func lineDiff(a, b string) []diffLine {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x)*len(y) > maxDiffCells {
		out := make([]diffLine, 0, len(x)+len(y))
		for _, l := range x {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range y {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			out = append(out, diffLine{" ", x[i]})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, diffLine{"+", y[j]})
			j++
		default:
			out = append(out, diffLine{"-", x[i]})
			i++
		}
	}
	return out
}
