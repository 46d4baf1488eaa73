package rules

// The values a condition read, recorded as its trace entry's input so that
// a reader sees why it held: state('id') and the other catalog readers,
// and the variable paths it names (trigger.to, vars.count, params.limit,
// steps.check.output).

import (
	"fmt"
)

// readsInto adds to m (made when nil) what x reads now, each value cut,
// up to maxReads values; it returns m.
func readsInto(m map[string]any, x *Expr, env *Env, w World) map[string]any {
	if x == nil || len(x.Refs)+len(x.paths)+x.omitted == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]any, min(len(x.Refs)+len(x.paths), maxReads))
	}
	add := func(k string, v func() any) {
		if _, ok := m[k]; ok {
			return
		}
		if len(m) >= maxReads {
			m[omittedKey] = "more values were read than a trace entry records"
			return
		}
		m[k] = cutRead(v())
	}
	for _, ref := range x.Refs {
		add(ref.Fn+"('"+ref.ID+"')", func() any { return readRef(w, ref) })
	}
	for _, p := range x.paths {
		if p.root == "now" {
			add(p.text, func() any { return w.Now().In(placeOf(w).Zone) })
			continue
		}
		add(p.text, func() any { return env.readPath(p) })
	}
	if x.omitted > 0 {
		m[omittedKey] = fmt.Sprintf("%d more paths are read but not recorded", x.omitted)
	}
	return m
}

// cutRead is a read value as the trace keeps it: a copy (the run's maps
// change later), cut like a summary output; a short scalar as it is,
// without encoding it (conditions run on every firing).
func cutRead(v any) any {
	if s, ok := v.(string); ok && len(s) <= TruncatePreview {
		return s
	}
	if _, ok := v.(string); !ok && safeScalar(v) {
		return v
	}
	return truncateOutput(jsonSafe(v))
}

// omittedKey names the note of what an entry's reads leave out.
const omittedKey = "…"

// readRef is what a catalog reader returns for ref now.
func readRef(w World, ref Ref) any {
	switch ref.Fn {
	case "state":
		v, _ := w.State(ref.ID)
		return v
	case "available":
		return availableIn(w, ref.ID)
	}
	t, ok := lastChangedOf(w, ref.ID)
	if !ok {
		return nil
	}
	if ref.Fn == "since" {
		return max(w.Now().Sub(t).Seconds(), 0)
	}
	return t.In(placeOf(w).Zone)
}

// noteReads records reads as entry i's input (nothing when there are none),
// charged to the run's bytes.
func (r *interp) noteReads(i int, qid string, reads map[string]any) *halt {
	if len(reads) == 0 {
		return nil
	}
	if h := r.record(qid, "the values read", reads); h != nil {
		return h
	}
	r.steps[i].Input = reads
	return nil
}
