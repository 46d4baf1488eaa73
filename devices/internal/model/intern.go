package model

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Interner shares equal immutable values (schemas, tag lists, names and
// descriptions) between the entries of one catalog: many devices of one
// model describe themselves identically, and every live object is marked by
// every garbage collection. Shared slices have len == cap, so an append by a
// reader copies instead of writing into a neighbour's value.
type Interner struct {
	raws   map[string]json.RawMessage
	strs   map[string]string
	tags   map[string][]string
	fields map[string]map[string]*Field
}

// maxInterned bounds the tables; they start over when full (values already
// shared stay shared, only later builds stop finding them).
const maxInterned = 4096

func NewInterner() *Interner {
	return &Interner{raws: map[string]json.RawMessage{}, strs: map[string]string{}, tags: map[string][]string{},
		fields: map[string]map[string]*Field{}}
}

func (in *Interner) Trim() {
	if len(in.raws)+len(in.strs)+len(in.tags)+len(in.fields) > maxInterned {
		*in = *NewInterner()
	}
}

func (in *Interner) raw(b json.RawMessage) json.RawMessage {
	if v, ok := in.raws[string(b)]; ok {
		return v
	}
	b = b[:len(b):len(b)]
	in.raws[string(b)] = b
	return b
}

func (in *Interner) Str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.strs[s]; ok {
		return v
	}
	s = strings.Clone(s)
	in.strs[s] = s
	return s
}

// concat is in.str(a + b) without building a + b when it is known.
func (in *Interner) concat(a, b string) string {
	n := len(a) + len(b)
	if n <= 64 {
		var buf [64]byte
		k := append(append(buf[:0], a...), b...)
		if v, ok := in.strs[string(k)]; ok {
			return v
		}
	}
	s := a + b
	in.strs[s] = s
	return s
}

// fieldMap shares the checks of equal actions (every light of a model):
// built fields are never changed, and what writeFieldKey writes decides
// what Call accepts (the schemas are gone by now).
func (in *Interner) fieldMap(fields map[string]*Field) map[string]*Field {
	var b strings.Builder
	if !writeFieldsKey(&b, fields) {
		return fields
	}
	key := b.String()
	if v, ok := in.fields[key]; ok {
		return v
	}
	in.fields[key] = fields
	return fields
}

// writeFieldsKey writes what identifies the checks of fields; false when a
// value has no JSON form to tell it by.
func writeFieldsKey(b *strings.Builder, fields map[string]*Field) bool {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for _, k := range keys {
		fmt.Fprintf(b, "%q:", k)
		if !writeFieldKey(b, fields[k]) {
			return false
		}
		b.WriteByte(';')
	}
	b.WriteByte('}')
	return true
}

func (in *Interner) tagList(tags []string) []string {
	if len(tags) == 0 {
		return tags
	}
	key := strings.Join(tags, "\x00")
	if v, ok := in.tags[key]; ok {
		return v
	}
	tags = tags[:len(tags):len(tags)]
	in.tags[key] = tags
	return tags
}

// TextSlab builds several strings as substrings of one allocation: add
// names the destination, done fills them all in.
type TextSlab struct {
	buf  []byte
	dsts []*string
	ends []int
}

func (t *TextSlab) Add(dst *string, parts ...string) {
	for _, p := range parts {
		t.buf = append(t.buf, p...)
	}
	t.dsts = append(t.dsts, dst)
	t.ends = append(t.ends, len(t.buf))
}

func (t *TextSlab) Done() {
	all, start := string(t.buf), 0
	for i, d := range t.dsts {
		*d = all[start:t.ends[i]]
		start = t.ends[i]
	}
}
