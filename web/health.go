package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// counter is one number of /healthz as the health page shows it.
type counter struct {
	Path  string // its JSON path, "devices.refused.oversized_messages"
	Value string // as /healthz writes it
	// Note explains it; nil for a counter healthNotes lacks, shown by
	// its path and value alone.
	Note  *counterNote
	order int // its note's place in healthNotes (unexplained ones last)
	key   string
}

// Text is the counter's sentence.
func (c counter) Text() string {
	if c.Note == nil {
		return c.Path + " = " + c.Value
	}
	means := c.Note.Means
	if c.Value == "1" && strings.HasPrefix(means, "%s ") {
		means = singular(means)
	}
	if strings.Contains(means, "%[2]s") {
		return fmt.Sprintf(means, c.Value, c.key)
	}
	return fmt.Sprintf(means, c.Value)
}

// singulars are the plural words a note's count may lead: "1 entry was".
var singulars = strings.NewReplacer("changes ", "change ", "values ", "value ", "rows ", "row ", "entries ", "entry ",
	"devices ", "device ", "configs ", "config ", "renderings ", "rendering ", "connections ", "connection ",
	"streams ", "stream ", "requests ", "request ", "bodies ", "body ", "sessions ", "session ", "messages ", "message ",
	"records ", "record ", "firings ", "firing ", "triggers ", "trigger ", "clients ", "client ", "attempts ", "attempt ",
	"reads ", "read ", "rules ", "rule ", "writes ", "write ")

// singular words a note for a count of one: the noun its count leads
// and the verb after it ("1 entry was lost", "1 of the entries was").
func singular(means string) string {
	for _, v := range [][2]string{{" were ", " was "}, {" are ", " is "}, {" wait ", " waits "}} {
		subject, rest, ok := strings.Cut(means, v[0])
		if !ok {
			continue
		}
		if !strings.HasPrefix(subject, "%s of ") {
			subject = strings.TrimSuffix(singulars.Replace(subject+" "), " ")
		}
		return subject + v[1] + rest
	}
	return means
}

// Next is what to do about the counter ("" for work as usual).
func (c counter) Next() string {
	if c.Note == nil {
		return "No explanation of this counter yet: docs/configuration.md describes /healthz."
	}
	return c.Note.Next
}

// Trouble reports whether the counter, not zero, needs a look: a loss,
// a refusal, a cut, or a counter no note explains.
func (c counter) Trouble() bool { return c.Note == nil || c.Note.Kind == noteTrouble }

// noteIndex finds the note of a path, trying a "*" for each part after
// the first (a map's key, a notify channel's name).
func noteIndex(path string) (i int, key string) {
	for j := range healthNotes {
		if healthNotes[j].Path == path {
			return j, ""
		}
	}
	parts := strings.Split(path, ".")
	for k := 1; k < len(parts); k++ {
		p := append([]string(nil), parts...)
		p[k] = "*"
		wild := strings.Join(p, ".")
		for j := range healthNotes {
			if healthNotes[j].Path == wild {
				return j, parts[k]
			}
		}
	}
	return -1, ""
}

// KnowsCounter reports whether the health page has a sentence for the
// /healthz number at path ("*" in a path stands for a map's key).
func KnowsCounter(path string) bool {
	i, _ := noteIndex(path)
	return i >= 0
}

// counters reads the non-zero numbers of the /healthz document
// (Options.Counters), in the order of healthNotes, unexplained ones last.
func (s *server) counters() []counter {
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
	var out []counter
	flatten(doc, "", &out)
	sort.SliceStable(out, func(a, b int) bool { return out[a].order < out[b].order })
	return out
}

// flatten appends the non-zero numbers under v.
func flatten(v any, path string, out *[]counter) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(x[k], p, out)
		}
	case json.Number:
		if f, err := x.Float64(); err != nil || f == 0 {
			return
		}
		c := counter{Path: path, Value: x.String(), order: len(healthNotes)}
		if i, key := noteIndex(path); i >= 0 {
			c.Note, c.order, c.key = &healthNotes[i], i, key
		}
		*out = append(*out, c)
	}
}

// counterValue is the value of the /healthz number at path, 0 when zero
// or absent.
func counterValue(cs []counter, path string) string {
	for _, c := range cs {
		if c.Path == path {
			return c.Value
		}
	}
	return ""
}

// troubles counts the counters that need a look.
func troubles(cs []counter) int {
	n := 0
	for _, c := range cs {
		if c.Trouble() {
			n++
		}
	}
	return n
}

// healthData is the health page.
type healthData struct {
	Trouble, Usual []counter
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
