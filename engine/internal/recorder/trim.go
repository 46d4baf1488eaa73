package recorder

import (
	"container/heap"
	"slices"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// trimOptions says what to trim with this batch (rides in its
// transaction): the rules due by count or bytes, and the principals due
// by bytes.
func (w *batchWriter) trimOptions() storage.WriteOptions {
	r := w.r
	w.countBytes()
	trim := w.trims()
	for rule, n := range w.ruleBytes {
		if r.MaxRuleBytes > 0 && n >= r.MaxRuleBytes/4 && !slices.Contains(trim, rule) {
			trim = append(trim, rule)
		}
	}
	for _, rule := range trim {
		delete(w.ruleBytes, rule)
	}
	slices.Sort(trim)
	o := storage.WriteOptions{Trim: trim, KeepPerStatus: r.keep, MaxRuleBytes: r.MaxRuleBytes}
	if r.MaxPrincipalBytes <= 0 {
		clear(w.principalBytes)
		return o
	}
	// A principal is trimmed when it wrote an eighth of its bound since:
	// the trim scans all its firings (about a second for 50,000).
	for p, n := range w.principalBytes {
		if r.Unbounded != nil && r.Unbounded(p) {
			delete(w.principalBytes, p)
			continue
		}
		if n >= r.MaxPrincipalBytes/8 {
			o.TrimPrincipals = append(o.TrimPrincipals, p)
			delete(w.principalBytes, p)
		}
	}
	slices.Sort(o.TrimPrincipals)
	o.MaxPrincipalBytes = r.MaxPrincipalBytes
	return o
}

// countBytes adds the batch's firings' bytes to their rule's and
// principal's since the last trim.
func (w *batchWriter) countBytes() {
	for i := range w.rows {
		run := &w.rows[i]
		if run.Kind != storage.KindFiring || run.Rule == "" {
			continue
		}
		w.ruleBytes[run.Rule] += int64(len(run.Envelope))
		w.principalBytes[run.Principal] += int64(len(run.Envelope))
	}
}

// retryTrims keeps what a failed batch was to trim due with the next
// batch after trimEvery.
func (w *batchWriter) retryTrims(o storage.WriteOptions) {
	for _, rule := range o.Trim {
		w.trimCount[rule] += w.r.keep
	}
	for _, p := range o.TrimPrincipals {
		w.principalBytes[p] += w.r.MaxPrincipalBytes / 8
	}
}

// trims lists the rules due by count: at most once per trimEvery, for
// the rules that stored at least keep runs since, and at once for a rule
// that stored hotTrim × keep runs since or had firings superseded in this
// batch.
func (w *batchWriter) trims() []string {
	var trim []string
	for _, run := range w.rows {
		if run.Rule == "" || w.superseded[run.Rule] {
			continue
		}
		n := w.trimCount[run.Rule] + 1
		w.trimCount[run.Rule] = n
		if n == hotTrim*w.r.keep {
			trim = append(trim, run.Rule)
		}
	}
	for rule := range w.superseded {
		trim = append(trim, rule)
	}
	for _, rule := range trim {
		delete(w.trimCount, rule)
	}
	if time.Since(w.lastTrim) >= trimEvery {
		w.lastTrim = time.Now()
		for rule, n := range w.trimCount {
			if n >= w.r.keep {
				trim = append(trim, rule)
				delete(w.trimCount, rule)
			}
		}
	}
	return trim
}

// fitBytes adds added bytes to tail k and supersedes its oldest firings
// while it holds more than MaxRuleBytes, never its newest: the batch
// never writes what its trim would delete at once, so a rule's large
// firings cannot grow the database file by a batch of them.
func (w *batchWriter) fitBytes(k tailKey, t *tail, added int) {
	w.tailBytes[k] += int64(added)
	for w.r.MaxRuleBytes > 0 && len(*t) > 1 && w.tailBytes[k] > w.r.MaxRuleBytes {
		old := heap.Pop(t).(*Item)
		w.tailBytes[k] -= int64(len(old.json))
		old.json = nil
		w.held--
		w.superseded[k.rule] = true
	}
}
