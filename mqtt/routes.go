package mqtt

import "slices"

// routes is a subscription table shared by Client and the embedded broker's
// inline router: exact filters are one map lookup, and only wildcard filters
// are matched one by one, without allocating (mochi's topic index builds
// new maps for every message). A filter set's subscription is registered
// under each of its filters. Callers hold their own lock.
type routes struct {
	byFilter map[string][]*subscription
	wild     []string // the filters of byFilter with wildcards
}

// add registers s under filter and returns the filter's subscriptions.
func (r *routes) add(filter string, s *subscription) []*subscription {
	if r.byFilter == nil {
		r.byFilter = map[string][]*subscription{}
	}
	if len(r.byFilter[filter]) == 0 && isWild(filter) {
		r.wild = append(r.wild, filter)
	}
	r.byFilter[filter] = append(r.byFilter[filter], s)
	return r.byFilter[filter]
}

// remove unregisters s from filter and reports whether the filter has no
// subscription left; the table's slices are never changed in place, so a
// caller iterating a copy of them is unaffected.
func (r *routes) remove(filter string, s *subscription) (last bool) {
	subs := r.byFilter[filter]
	for i, x := range subs {
		if x == s {
			subs = append(subs[:i:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) > 0 {
		r.byFilter[filter] = subs
		return false
	}
	delete(r.byFilter, filter)
	for i, f := range r.wild {
		if f == filter {
			r.wild = append(r.wild[:i:i], r.wild[i+1:]...)
			break
		}
	}
	return true
}

// matching appends to out every subscription with a filter that matches
// topic, each once (a set may match a topic through several filters).
func (r *routes) matching(topic string, out []*subscription) []*subscription {
	add := func(subs []*subscription) {
		for _, s := range subs {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	add(r.byFilter[topic])
	for _, f := range r.wild {
		if TopicMatch(f, topic) {
			add(r.byFilter[f])
		}
	}
	return out
}
