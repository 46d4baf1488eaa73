package web

import (
	"net/http"
	"strings"
)

// guidesData is what the guides page gets: the list, or one guide as
// blocks (the guides are the server's own Markdown: headings, code and
// paragraphs are all they use that a page needs to show).
type guidesData struct {
	Guides []guideRow
	Guide  *guideRow
	Blocks []guideBlock
}

type guideRow struct{ ID, Title, Summary string }

type guideBlock struct {
	Kind string // "h2", "h3", "pre" or "p"
	Text string
}

// guidesPage serves the language guides an assistant reads with
// pilotage_learn, for the person writing rules in the editor.
func (s *server) guidesPage(w http.ResponseWriter, r *http.Request, ss *session) {
	var d guidesData
	for _, g := range s.e.Guides() {
		d.Guides = append(d.Guides, guideRow{ID: g.ID, Title: g.Title, Summary: g.Summary})
	}
	title := "Guides"
	if id := r.PathValue("id"); id != "" {
		g, ok := s.e.Guide(id)
		if !ok {
			s.fail(w, r, ss, http.StatusNotFound, "No guide called "+id+".", nil)
			return
		}
		d.Guide, d.Blocks, title = &guideRow{ID: g.ID, Title: g.Title, Summary: g.Summary}, guideBlocks(g.Body), g.Title
	}
	s.render(w, r, ss, "guides", page{Title: title, Nav: "rules", Data: d})
}

// guideBlocks splits a guide's Markdown into headings, fenced code and
// paragraphs; text stays as written (the page escapes it).
func guideBlocks(body string) []guideBlock {
	var out []guideBlock
	var cur []string
	kind := "p"
	flush := func() {
		if t := strings.TrimSpace(strings.Join(cur, "\n")); t != "" || kind == "pre" {
			out = append(out, guideBlock{Kind: kind, Text: t})
		}
		cur, kind = nil, "p"
	}
	for _, line := range strings.Split(body, "\n") {
		switch {
		case kind == "pre" && strings.HasPrefix(line, "```"):
			flush()
		case kind == "pre":
			cur = append(cur, line)
		case strings.HasPrefix(line, "```"):
			flush()
			kind = "pre"
		case strings.HasPrefix(line, "## "), strings.HasPrefix(line, "### "), strings.HasPrefix(line, "# "):
			flush()
			level, text, _ := strings.Cut(line, " ")
			out = append(out, guideBlock{Kind: map[string]string{"#": "h2", "##": "h2", "###": "h3"}[level], Text: text})
		case strings.TrimSpace(line) == "":
			flush()
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return out
}
