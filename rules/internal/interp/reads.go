package interp

// The values a condition read, recorded as its trace entry's input so that
// a reader sees why it held: state('id') and the other catalog readers,
// and the variable paths it names (trigger.to, vars.count, params.limit,
// steps.check.output).

import (
	"fmt"

	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// readsInto adds to m (made when nil) what x reads now, each value cut,
// up to maxReads values; it returns m.
func readsInto(m map[string]any, x *model.Expr, env *model.Env, w model.World) map[string]any {
	if x == nil || len(x.Refs)+len(x.Sels)+len(x.Paths)+x.Omitted == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]any, min(len(x.Refs)+len(x.Sels)+len(x.Paths), model.MaxReads))
	}
	add := func(k string, v func() any) {
		if _, ok := m[k]; ok {
			return
		}
		if len(m) >= model.MaxReads {
			m[OmittedKey] = "more values were read than a trace entry records"
			return
		}
		m[k] = cutRead(v())
	}
	for _, ref := range x.Refs {
		add(ref.Fn+"('"+ref.ID+"')", func() any { return readRef(w, ref) })
	}
	for _, sr := range x.Sels {
		add(sr.Text, func() any {
			v, err := model.SelReads(w, sr, env.Selected[sr.Sel.Key()])
			if err != nil {
				return err.Error()
			}
			return v
		})
	}
	for _, p := range x.Paths {
		if p.Root == "now" {
			add(p.Text, func() any { return w.Now().In(model.PlaceOf(w).Zone) })
			continue
		}
		add(p.Text, func() any { return env.ReadPath(p) })
	}
	if x.Omitted > 0 {
		m[OmittedKey] = fmt.Sprintf("%d more paths are read but not recorded", x.Omitted)
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

// OmittedKey names the note of what an entry's reads leave out.
const OmittedKey = "…"

// readRef is what a catalog reader returns for ref now.
func readRef(w model.World, ref model.Ref) any {
	switch ref.Fn {
	case "state":
		v, _ := w.State(ref.ID)
		return v
	case "available":
		return model.AvailableIn(w, ref.ID)
	}
	t, ok := model.LastChangedOf(w, ref.ID)
	if !ok {
		return nil
	}
	if ref.Fn == "since" {
		return max(w.Now().Sub(t).Seconds(), 0)
	}
	return t.In(model.PlaceOf(w).Zone)
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
