package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// The approvals API is how `pilothouse approvals`, `approve` and `decline`
// decide a risky deploy from a terminal: JSON over the web UI's listener,
// authenticated by a bearer token (a browser never adds one by itself, so
// no CSRF token is needed). It is deliberately not an MCP tool: approval
// must come from outside the model.

// apiAuthed resolves the bearer token to a principal (the owner when
// logins are off), counting wrong tokens like wrong logins.
func (s *server) apiAuthed(h func(w http.ResponseWriter, r *http.Request, p *engine.Principal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(engine.FailFast(r.Context()))
		if !s.loginRequired() {
			h(w, r, engine.Owner)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p := s.principalOf(strings.TrimSpace(tok))
		if !ok {
			p = nil
		}
		pass, wait := s.logins.Admit(attempt(r, ok, p))
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
			apiError(w, http.StatusTooManyRequests, "too many wrong tokens from this address; try again later")
			return
		}
		if !pass {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pilothouse"`)
			apiError(w, http.StatusUnauthorized, "a valid bearer token is required")
			return
		}
		h(w, r, p)
	})
}

func (s *server) apiApprovals(w http.ResponseWriter, r *http.Request, p *engine.Principal) {
	list, err := s.e.ListApprovals(engine.WithPrincipal(r.Context(), p), r.URL.Query().Get("all") == "")
	if err != nil {
		s.log.Warn("listing approvals", "err", err)
		apiError(w, http.StatusInternalServerError, "listing approvals failed (the server log says why)")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

func (s *server) apiDecide(w http.ResponseWriter, r *http.Request, p *engine.Principal) {
	verb := r.PathValue("verb")
	if verb != "approve" && verb != "decline" {
		apiError(w, http.StatusNotFound, "unknown verb "+verb+" (approve, decline)")
		return
	}
	a, err := s.e.DecideApproval(engine.WithPrincipal(r.Context(), p), r.PathValue("id"), verb == "approve", engine.ChannelCLI)
	if err != nil {
		code, msg := decideError(err)
		if code == http.StatusInternalServerError {
			s.log.Warn("deciding an approval", "err", err)
		}
		apiError(w, code, msg)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval": a})
}

// decideError is the HTTP status and message of a failed decision.
func decideError(err error) (int, string) {
	switch {
	case errors.Is(err, engine.ErrApprovalNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, engine.ErrMayNotApprove):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, engine.ErrApprovalClosed):
		return http.StatusConflict, err.Error()
	}
	return http.StatusInternalServerError, "deciding the approval failed (the server log says why)"
}

func apiError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
