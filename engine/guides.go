package engine

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/rules"
)

// Guides are the Language's guides as this server serves them: the core
// guide ends with a section on this server (its time zone, whether sun
// triggers and conditions are available and where the location comes
// from).
func (e *Engine) Guides() []rules.Guide {
	e.guidesOnce.Do(func() {
		for _, g := range rules.Guides() {
			if g.ID == "core" {
				g = rules.WithSection(g, e.serverSection())
			}
			e.guides = append(e.guides, g)
		}
	})
	return e.guides
}

// Guide returns one served guide.
func (e *Engine) Guide(id string) (rules.Guide, bool) {
	for _, g := range e.Guides() {
		if g.ID == id {
			return g, true
		}
	}
	return rules.Guide{}, false
}

// GuideTopic returns one "## " section of a served guide (the whole body
// for the closed-sets topic of the closed-sets guide).
func (e *Engine) GuideTopic(id, topic string) (string, bool) {
	g, ok := e.Guide(id)
	if !ok {
		return "", false
	}
	if id == rules.ClosedSetsTopic && topic == rules.ClosedSetsTopic {
		return g.Body, true
	}
	return rules.SectionOf(g.Body, topic)
}

// serverSection is the core guide's "This server" section.
func (e *Engine) serverSection() string {
	var b strings.Builder
	zone := sched.ZoneText(e.cfg.TimeZone)
	b.WriteString("## This server\n\n")
	fmt.Fprintf(&b, "- **Time zone: %s.** `at` and `cron` triggers, time conditions, `hour()`, `minute()`, `weekday()`, `scenario.now` and the times in traces and `next_fire` are in it; `pilotage_discover` shows the local time now (`environment.now`).\n", zone)
	switch {
	case e.cfg.Location == nil:
		b.WriteString("- **Sun: not available.** No location is configured, so `sun` triggers and sun conditions are refused (`missing_location`): use `at`/`cron` triggers and time conditions instead.\n")
	case e.cfg.LocationSource == LocationDemo:
		fmt.Fprintf(&b, "- **Sun: available, at the demo house's example location** (%s, latitude %g, longitude %g): `sun` triggers and sun conditions follow sunrise and sunset there, not at a real house. `pilotage_discover` shows today's times (`environment.sun`).\n",
			demoPlaceName, e.cfg.Location.Latitude, e.cfg.Location.Longitude)
	default:
		fmt.Fprintf(&b, "- **Sun: available** at the configured location (latitude %g, longitude %g). `pilotage_discover` shows today's sunrise and sunset (`environment.sun`).\n",
			e.cfg.Location.Latitude, e.cfg.Location.Longitude)
	}
	b.WriteString(limitsLine(e.cfg.Limits))
	return b.String()
}

// limitsLine is the server section's line on the limits configured apart
// from the defaults the closed-sets guide's table gives (a lowered
// MaxRunOps ends a rule the table admits); none when there are none.
func limitsLine(l rules.Limits) string {
	l = l.WithDefaults()
	lv, dv := reflect.ValueOf(l), reflect.ValueOf(rules.DefaultLimits)
	var set []string
	for i := range lv.NumField() {
		if !lv.Field(i).Equal(dv.Field(i)) {
			set = append(set, fmt.Sprintf("`%s` %v", lv.Type().Field(i).Name, lv.Field(i).Interface()))
		}
	}
	if len(set) == 0 {
		return "" // the core guide keeps within 8 KiB
	}
	return "- **Limits: configured.** The `closed-sets` guide's limits table, except " + strings.Join(set, ", ") + ".\n"
}
