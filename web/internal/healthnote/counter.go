package healthnote

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Counter is one number of /healthz as the health page shows it.
type Counter struct {
	Path  string // its JSON path, "devices.refused.oversized_messages"
	Value string // as /healthz writes it
	// Note explains it; nil for a counter Notes lacks, shown by
	// its path and value alone.
	Note  *Note
	order int // its note's place in Notes (unexplained ones last)
	key   string
}

// Text is the counter's sentence.
func (c Counter) Text() string {
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
func (c Counter) Next() string {
	if c.Note == nil {
		return "No explanation of this counter yet: docs/configuration.md describes /healthz."
	}
	return c.Note.Next
}

// Trouble reports whether the counter, not zero, needs a look: a loss,
// a refusal, a cut, or a counter no note explains.
func (c Counter) Trouble() bool { return c.Note == nil || c.Note.Kind == Trouble }

// Index finds the note of a path, trying a "*" for each part after
// the first (a map's key, a notify channel's name).
func Index(path string) (i int, key string) {
	for j := range Notes {
		if Notes[j].Path == path {
			return j, ""
		}
	}
	parts := strings.Split(path, ".")
	for k := 1; k < len(parts); k++ {
		p := append([]string(nil), parts...)
		p[k] = "*"
		wild := strings.Join(p, ".")
		for j := range Notes {
			if Notes[j].Path == wild {
				return j, parts[k]
			}
		}
	}
	return -1, ""
}

// Knows reports whether the table has a sentence for the /healthz number
// at path ("*" in a path stands for a map's key).
func Knows(path string) bool {
	i, _ := Index(path)
	return i >= 0
}

// flatten appends the non-zero numbers under v.
func flatten(v any, path string, out *[]Counter) {
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
		f, err := x.Float64()
		if err != nil || f == 0 {
			return
		}
		c := Counter{Path: path, Value: x.String(), order: len(Notes)}
		if strings.HasSuffix(path, "_ms") {
			c.Value = wholeMS(f)
		}
		if i, key := Index(path); i >= 0 {
			c.Note, c.order, c.key = &Notes[i], i, key
		}
		*out = append(*out, c)
	}
}

// wholeMS is a duration in milliseconds as a person reads it: whole
// ("12048", not /healthz's "12047.573"), "under 1" below half of one.
func wholeMS(ms float64) string {
	if r := math.Round(ms); r != 0 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return "under 1"
}

// Value is the value of the /healthz number at path, 0 when zero
// or absent.
func Value(cs []Counter, path string) string {
	for _, c := range cs {
		if c.Path == path {
			return c.Value
		}
	}
	return ""
}

// Troubles counts the counters that need a look.
func Troubles(cs []Counter) int {
	n := 0
	for _, c := range cs {
		if c.Trouble() {
			n++
		}
	}
	return n
}

// Read lists the non-zero numbers of a /healthz document decoded with
// json.Number, in the order of Notes, unexplained ones last.
func Read(doc map[string]any) []Counter {
	var out []Counter
	flatten(doc, "", &out)
	sort.SliceStable(out, func(a, b int) bool { return out[a].order < out[b].order })
	return out
}
