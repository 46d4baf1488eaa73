package devices

import "sort"

// route handles one payload on a routed topic.
type route func(tx *rec, payload []byte)

type topicRoute struct {
	topic string
	fn    route
}

// topicRoutes are the routes of one topic. Nearly always one device has
// one route on a topic (dev, one: no allocation of its own); otherwise
// byDev holds them by device and list in device order, rebuilt after a
// change when the topic next carries a message.
type topicRoutes struct {
	dev   string
	one   route
	byDev map[string][]route
	list  []route
}

// add adds a device's route.
func (tr *topicRoutes) add(dev string, r route) {
	switch {
	case tr.one == nil && tr.byDev == nil:
		tr.dev, tr.one = dev, r
		return
	case tr.byDev == nil:
		tr.byDev = map[string][]route{tr.dev: {tr.one}}
		tr.dev, tr.one = "", nil
	}
	tr.byDev[dev] = append(tr.byDev[dev], r)
	tr.list = nil
}

// remove takes a device's routes out; it reports whether none are left.
func (tr *topicRoutes) remove(dev string) bool {
	if tr.byDev == nil {
		if tr.dev == dev {
			tr.dev, tr.one = "", nil
		}
		return tr.one == nil
	}
	delete(tr.byDev, dev)
	tr.list = nil
	return len(tr.byDev) == 0
}

func (tr *topicRoutes) run(tx *rec, payload []byte) {
	if tr.byDev == nil {
		tr.one(tx, payload)
		return
	}
	if tr.list == nil {
		devs := make([]string, 0, len(tr.byDev))
		for d := range tr.byDev {
			devs = append(devs, d)
		}
		sort.Strings(devs)
		for _, d := range devs {
			tr.list = append(tr.list, tr.byDev[d]...)
		}
	}
	for _, r := range tr.list {
		r(tx, payload)
	}
}
