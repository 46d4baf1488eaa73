package web

import (
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// How fully a device is modelled, as its catalog entries say it (the same
// marks devices.Coverage counts for /healthz): a device entry tagged
// "unmodelled" or "partial", or a state tagged "unsupported" (a Home
// Assistant template the interpreter cannot read), which makes its device
// partial.
const (
	fidelityFull       = ""
	fidelityPartial    = "partial"
	fidelityUnmodelled = "unmodelled"
	tagUnsupported     = "unsupported"
	// gapsMark starts the list of what is missing in a device entry's
	// description ("… Not fully modelled: a; b.").
	gapsMark = " Not fully modelled: "
	// gapsParam is the Devices page filter for devices not fully modelled.
	gapsParam = "gaps"
)

// markFidelity sets how fully dv is modelled and what is missing, from
// its entries: the device's own list of gaps, its unsupported states, and
// for a device nothing could be modelled of, its description (the reason).
func markFidelity(dv *deviceView) {
	if dv.Entry.Kind != pilotage.KindDevice {
		return
	}
	desc := dv.Entry.Description
	switch {
	case hasTag(dv.Entry.Tags, fidelityUnmodelled):
		dv.Fidelity = fidelityUnmodelled
	case hasTag(dv.Entry.Tags, fidelityPartial):
		dv.Fidelity = fidelityPartial
	}
	if i := strings.Index(desc, gapsMark); i >= 0 && dv.Fidelity != fidelityFull {
		dv.Gaps = strings.Split(strings.TrimSuffix(desc[i+len(gapsMark):], "."), "; ")
	} else if dv.Fidelity == fidelityUnmodelled && desc != "" {
		dv.Gaps = []string{desc}
	}
	for _, r := range dv.States {
		if !hasTag(r.Entry.Tags, tagUnsupported) {
			continue
		}
		if dv.Fidelity == fidelityFull {
			dv.Fidelity = fidelityPartial
		}
		why := "its live value cannot be read"
		if _, after, ok := strings.Cut(r.Entry.Description, "Live value unsupported: "); ok {
			why = "its live value cannot be read: " + strings.TrimSuffix(after, ".")
		}
		dv.Gaps = append(dv.Gaps, "state "+r.Entry.ID+": "+why)
	}
}

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}

// coverageView is the Devices page's line on how fully the visible
// devices are modelled.
type coverageView struct {
	Devices, Full, Partial, Unmodelled int
	Scoped                             bool // counted over the login's scope, not the house
	// Refused is how many messages the catalog refused for their size
	// (/healthz devices.refused.oversized_messages): a refused discovery
	// config leaves its device out, so "all fully modelled" would be false.
	Refused string
}

// refusedText is the line's part about refused messages.
func (c coverageView) refusedText() string {
	if c.Refused == "" {
		return ""
	}
	if c.Refused == "1" {
		return " 1 message was refused for its size (a discovery config or a state)."
	}
	return " " + c.Refused + " messages were refused for their size (discovery configs or states)."
}

// Text is the line: "312 devices: 309 fully modelled, 3 partly
// modelled." (the page links the devices that are not).
func (c coverageView) Text() string {
	n := engine.Plural(c.Devices, "device", "")
	if c.Scoped {
		n += " in your scope"
	}
	if c.Devices == 0 {
		return strings.TrimSpace(c.refusedText())
	}
	if c.Full == c.Devices && c.Refused != "" {
		return n + ", modelled as far as read." + c.refusedText()
	}
	if c.Full == c.Devices {
		if c.Devices == 1 {
			return n + ", fully modelled."
		}
		return n + ", all fully modelled."
	}
	parts := []string{}
	if c.Full > 0 {
		parts = append(parts, countOf(c.Full, c.Devices)+" fully modelled")
	}
	if c.Partial > 0 {
		parts = append(parts, countOf(c.Partial, c.Devices)+" partly modelled")
	}
	if c.Unmodelled > 0 {
		parts = append(parts, countOf(c.Unmodelled, c.Devices)+" not modelled at all")
	}
	return n + ": " + engine.JoinList(parts, "and") + "." + c.refusedText()
}

// Gaps is how many devices are not fully modelled.
func (c coverageView) Gaps() int { return c.Partial + c.Unmodelled }

// countOf is "3", or "all 3" when it is every device.
func countOf(n, of int) string {
	if n == of && n > 1 {
		return "all " + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// coverageOf counts the devices of list by how fully they are modelled
// (notification channels, other device-less groups and helpers aside:
// /healthz counts the same).
func coverageOf(list []*deviceView, scoped bool) coverageView {
	c := coverageView{Scoped: scoped}
	for _, dv := range list {
		if dv.Entry.Kind != pilotage.KindDevice || dv.Type == "helper" {
			continue
		}
		c.Devices++
		switch dv.Fidelity {
		case fidelityPartial:
			c.Partial++
		case fidelityUnmodelled:
			c.Unmodelled++
		default:
			c.Full++
		}
	}
	return c
}

// Desc is the device's description without the list of what is missing
// when the page shows that list on its own.
func (dv *deviceView) Desc() string {
	d := dv.Entry.Description
	if dv.Fidelity == fidelityUnmodelled && len(dv.Gaps) == 1 && dv.Gaps[0] == d {
		return ""
	}
	if i := strings.Index(d, gapsMark); i >= 0 && len(dv.Gaps) > 0 {
		return d[:i]
	}
	return d
}
