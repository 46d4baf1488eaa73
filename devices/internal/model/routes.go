package model

import "sort"

// Route handles one payload on a routed topic.
type Route func(tx *Rec, payload []byte)

type TopicRoute struct {
	Topic string
	Fn    Route
}

// TopicRoutes are the routes of one topic. Nearly always one device has
// one route on a topic (dev, one: no allocation of its own); otherwise
// byDev holds them by device and list in device order, rebuilt after a
// change when the topic next carries a message.
type TopicRoutes struct {
	dev   string
	one   Route
	ByDev map[string][]Route
	List  []Route
}

// Add adds a device's route.
func (tr *TopicRoutes) Add(dev string, r Route) {
	switch {
	case tr.one == nil && tr.ByDev == nil:
		tr.dev, tr.one = dev, r
		return
	case tr.ByDev == nil:
		tr.ByDev = map[string][]Route{tr.dev: {tr.one}}
		tr.dev, tr.one = "", nil
	}
	tr.ByDev[dev] = append(tr.ByDev[dev], r)
	tr.List = nil
}

// Remove takes a device's routes out; it reports whether none are left.
func (tr *TopicRoutes) Remove(dev string) bool {
	if tr.ByDev == nil {
		if tr.dev == dev {
			tr.dev, tr.one = "", nil
		}
		return tr.one == nil
	}
	delete(tr.ByDev, dev)
	tr.List = nil
	return len(tr.ByDev) == 0
}

func (tr *TopicRoutes) Run(tx *Rec, payload []byte) {
	if tr.ByDev == nil {
		tr.one(tx, payload)
		return
	}
	if tr.List == nil {
		devs := make([]string, 0, len(tr.ByDev))
		for d := range tr.ByDev {
			devs = append(devs, d)
		}
		sort.Strings(devs)
		for _, d := range devs {
			tr.List = append(tr.List, tr.ByDev[d]...)
		}
	}
	for _, r := range tr.List {
		r(tx, payload)
	}
}
