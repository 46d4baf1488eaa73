package guides

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"strconv"
	"strings"
)

// Guide is one teaching unit of automation/1 (spec §5.2).
type Guide struct {
	ID, Title, Level string
	Topics           []string // the "## " section slugs (+ "closed-sets" on that guide)
	Version          string   // content hash
	SizeBytes        int
	MediaType        string
	Summary          string
	Body             string
}

// Guide levels.
const (
	LevelCore      = "core"
	LevelReference = "reference"
)

// ClosedSetsTopic is the reserved topic of the one closed-sets guide.
const ClosedSetsTopic = "closed-sets"

//go:embed *.md
var guideFS embed.FS

// guideIndex is the served order; closed-sets is generated, not embedded.
var guideIndex = []struct{ id, level, summary string }{
	{"core", LevelCore, "Start here: what a program is, one complete example, and the discover → learn → lookup → validate → execute → trace loop."},
	{ClosedSetsTopic, LevelReference, "Every closed set: diagnostic codes, entry kinds, risk levels, run and step statuses, trigger and step kinds, modes, limits; scope rules, the input convention, outputs and trace format."},
	{"triggers", LevelReference, "State, numeric, event (value sets), cron, time-of-day and sun triggers; thresholds, holds, times and offsets as params; conditions (expressions, time windows across midnight, weekdays, sun); throttle; trigger.* values; modes."},
	{"steps", LevelReference, "call, delay, wait, if, choose, repeat, set and stop, with their outputs."},
	{"expressions", LevelReference, "The closed expression environment: state(), trigger, params, vars, steps, time helpers, templates."},
	{"test-runs", LevelReference, "Simulating a firing with test_run: the params/scenario input, timelines on the virtual clock, held and scheduled triggers, waits, not_triggered and assumed, outputs and traces."},
	{"porting", LevelReference, "Porting from Home Assistant: each trigger, condition and action in automation/1, and the differences that remain (the wait timeout default, held values at arming, polar sun, what is not expressible)."},
	{"helpers", LevelReference, "Helpers, the household's own state (flag, number, choice, text, datetime, counter, timer): their entries and actions, triggering on and calling them, test runs; recipes: vacation mode, notify once per day, presence heating with a house-empty flag, wake-up time from a helper."},
	{"cookbook", LevelReference, cookbookRules + " complete rules by task, each with its test runs: motion lights, away mode, door alerts, all lights off by type, a door opening after no motion sensor saw anyone, heating, remote scenes and gestures, locks, laundry, loops, sunset and sunrise, night windows, weekdays, throttles, time since change, a reusable motion light with device params, a humidity fan and a door alert with threshold and hold params, an automation others call and its caller, stored runs."},
}

var guides = loadGuides()

// cookbookRules stands, in guide bodies and summaries, for the number of
// complete rules the cookbook holds (its ```json blocks), counted when the
// guides load, so no guide states a count typed by hand.
const cookbookRules = "@COOKBOOK_RULES@"

// cookbookCount is the number of complete rules (```json blocks) in the
// cookbook's body.
func cookbookCount() int {
	b, err := guideFS.ReadFile("cookbook.md")
	if err != nil {
		panic("rules: the cookbook is not embedded: " + err.Error()) // build-time invariant
	}
	return strings.Count(string(b), "```json\n")
}

func loadGuides() []Guide {
	out := make([]Guide, 0, len(guideIndex))
	count := strconv.Itoa(cookbookCount())
	for _, g := range guideIndex {
		var body string
		if g.id == ClosedSetsTopic {
			body = closedSetsBody()
		} else {
			b, err := guideFS.ReadFile(g.id + ".md")
			if err != nil {
				panic("rules: guide " + g.id + " is not embedded: " + err.Error()) // build-time invariant
			}
			body = string(b)
		}
		out = append(out, newGuide(g.id, g.level, strings.ReplaceAll(g.summary, cookbookRules, count), strings.ReplaceAll(body, cookbookRules, count)))
	}
	return out
}

func newGuide(id, level, summary, body string) Guide {
	sum := sha256.Sum256([]byte(body))
	g := Guide{
		ID: id, Level: level, Summary: summary, Body: body,
		Title:     guideTitle(body, id),
		Version:   "sha256:" + hex.EncodeToString(sum[:8]),
		SizeBytes: len(body),
		MediaType: "text/markdown",
	}
	if id == ClosedSetsTopic {
		g.Topics = append(g.Topics, ClosedSetsTopic)
	}
	for _, s := range sections(body) {
		g.Topics = append(g.Topics, s.slug)
	}
	return g
}

// WithSection returns g with a "## " section appended (a server's own
// facts, such as its time zone): version, size and topics follow the
// new body.
func WithSection(g Guide, section string) Guide {
	body := strings.TrimRight(g.Body, "\n") + "\n\n" + strings.TrimRight(section, "\n") + "\n"
	return newGuide(g.ID, g.Level, g.Summary, body)
}

// Guides returns every guide, in index order (bodies included).
func Guides() []Guide {
	out := make([]Guide, len(guides))
	copy(out, guides)
	return out
}

// GuideByID returns one guide.
func GuideByID(id string) (Guide, bool) {
	for _, g := range guides {
		if g.ID == id {
			return g, true
		}
	}
	return Guide{}, false
}

// GuideTopic returns one "## " section of a guide (heading included) by its
// slug. On the closed-sets guide the topic "closed-sets" is the whole body.
func GuideTopic(id, topic string) (string, bool) {
	g, ok := GuideByID(id)
	if !ok {
		return "", false
	}
	if id == ClosedSetsTopic && topic == ClosedSetsTopic {
		return g.Body, true
	}
	return SectionOf(g.Body, topic)
}

// SectionOf returns the "## " section of a guide body by its slug.
func SectionOf(body, topic string) (string, bool) {
	for _, s := range sections(body) {
		if s.slug == topic {
			return s.text, true
		}
	}
	return "", false
}

func guideTitle(body, fallback string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "# ") {
			return strings.TrimSpace(line[2:])
		}
	}
	return fallback
}

type section struct{ slug, text string }

// sections splits a markdown body at "## " headings outside code fences.
func sections(body string) []section {
	var out []section
	lines := strings.SplitAfter(body, "\n")
	fence := false
	cur := -1
	var b strings.Builder
	flush := func() {
		if cur >= 0 {
			out[cur].text = strings.TrimRight(b.String(), "\n") + "\n"
		}
		b.Reset()
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(l, "## ") {
			flush()
			out = append(out, section{slug: slugify(strings.TrimSpace(l[3:]))})
			cur = len(out) - 1
		}
		if cur >= 0 {
			b.WriteString(l)
		}
	}
	flush()
	return out
}

// slugify lowercases a heading and joins its words with '-'.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	return b.String()
}
