package web

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/pilothouse/pilothouse/web/internal/healthnote"
)

// KnowsCounter reports whether the health page has a sentence for the
// /healthz number at path ("*" in a path stands for a map's key).
func KnowsCounter(path string) bool { return healthnote.Knows(path) }

// counters reads the non-zero numbers of the /healthz document
// (Options.Counters), in the order of the notes, unexplained ones last.
func (s *server) counters() []healthnote.Counter {
	if s.o.Counters == nil {
		return nil
	}
	b, err := json.Marshal(s.o.Counters())
	if err != nil {
		s.log.Error("encoding the health document", "err", err)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		s.log.Error("decoding the health document", "err", err)
		return nil
	}
	return healthnote.Read(doc)
}

// healthData is the health page.
type healthData struct {
	Trouble, Usual []healthnote.Counter
	Counted        bool // the server gave its /healthz document
}

func (s *server) healthPage(w http.ResponseWriter, r *http.Request, ss *session) {
	d := healthData{Counted: s.o.Counters != nil}
	for _, c := range s.counters() {
		if c.Trouble() {
			d.Trouble = append(d.Trouble, c)
		} else {
			d.Usual = append(d.Usual, c)
		}
	}
	s.render(w, r, ss, "health", page{Title: "Health", Nav: "health", Data: d})
}
