package mqtt

// routes is a subscription table shared by Client and the embedded broker's
// inline router: exact filters are one map lookup, and only wildcard filters
// are matched one by one, without allocating (paho's router and mochi's
// topic index both build new slices or maps for every message). Callers
// hold their own lock.
type routes struct {
	byFilter map[string][]*subscription
	wild     []string // the filters of byFilter with wildcards
}

// add registers s under its filter and returns the filter's subscriptions.
func (r *routes) add(s *subscription) []*subscription {
	if r.byFilter == nil {
		r.byFilter = map[string][]*subscription{}
	}
	if len(r.byFilter[s.filter]) == 0 && isWild(s.filter) {
		r.wild = append(r.wild, s.filter)
	}
	r.byFilter[s.filter] = append(r.byFilter[s.filter], s)
	return r.byFilter[s.filter]
}

// remove unregisters s; the table's slices are never changed in place, so
// a caller iterating a copy of them is unaffected.
func (r *routes) remove(s *subscription) {
	subs := r.byFilter[s.filter]
	for i, x := range subs {
		if x == s {
			subs = append(subs[:i:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) > 0 {
		r.byFilter[s.filter] = subs
		return
	}
	delete(r.byFilter, s.filter)
	for i, f := range r.wild {
		if f == s.filter {
			r.wild = append(r.wild[:i:i], r.wild[i+1:]...)
			break
		}
	}
}

// match calls fn for every subscription whose filter matches topic.
func (r *routes) match(topic string, fn func(*subscription)) {
	for _, s := range r.byFilter[topic] {
		fn(s)
	}
	for _, f := range r.wild {
		if topicMatch(f, topic) {
			for _, s := range r.byFilter[f] {
				fn(s)
			}
		}
	}
}
