package web

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/pilothouse/pilothouse/engine"
)

// recipe is one cookbook rule the editor can start from: the program, and
// the params and scenario of the test run the cookbook gives for it.
type recipe struct {
	Slug, Title      string
	Program          string
	Params, Scenario string
	Helpers          []recipeHelper // what the program reads and calls beside devices
}

// recipeHelper is a helper a recipe needs, as the create form's fields.
type recipeHelper struct {
	ID, Kind string
	Fields   map[string]string
}

// recipeBook reads the served cookbook guide once: its sections are fixed
// for the life of the process.
type recipeBook struct {
	once sync.Once
	list []recipe
}

func (b *recipeBook) all(e *engine.Engine) []recipe {
	b.once.Do(func() {
		// The helpers guide's recipes come after the cookbook's: both
		// teach an assistant, so the editor offers both.
		for _, name := range []string{"cookbook", "helpers"} {
			if g, ok := e.Guide(name); ok {
				b.list = append(b.list, parseRecipes(g.Body)...)
			}
		}
	})
	return b.list
}

func (b *recipeBook) get(e *engine.Engine, slug string) (recipe, bool) {
	for _, r := range b.all(e) {
		if r.Slug == slug {
			return r, true
		}
	}
	return recipe{}, false
}

var (
	jsonBlock    = regexp.MustCompile("(?s)```json\n(.*?)\n```")
	helpersBlock = regexp.MustCompile("(?s)```helpers\n(.*?)\n```")
	testRun      = regexp.MustCompile("Test run: `([^`]*)`")
	slugChars    = regexp.MustCompile(`[^a-z0-9]+`)
)

// parseRecipes takes each "## " section of the cookbook that holds a JSON
// program; its first "Test run:" line gives the params and scenario.
func parseRecipes(body string) []recipe {
	var out []recipe
	for _, sec := range strings.Split(body, "\n## ")[1:] {
		title, rest, _ := strings.Cut(sec, "\n")
		m := jsonBlock.FindStringSubmatch(rest)
		if m == nil {
			continue
		}
		r := recipe{Title: strings.TrimSpace(title), Program: m[1], Params: "{}", Scenario: "{}"}
		r.Slug = recipeSlug(r.Title)
		if t := testRun.FindStringSubmatch(rest); t != nil {
			r.Params, r.Scenario = splitInput(t[1])
		}
		if h := helpersBlock.FindStringSubmatch(rest); h != nil {
			r.Helpers = parseRecipeHelpers(h[1])
		}
		out = append(out, r)
	}
	return out
}

// recipeSlug is a recipe's name in a URL: its title's letters and digits,
// lowercase, words joined by '-'.
func recipeSlug(title string) string {
	return strings.Trim(slugChars.ReplaceAllString(strings.ToLower(title), "-"), "-")
}

// isSlug says whether s is a name recipeSlug could have made.
func isSlug(s string) bool { return len(s) <= 80 && recipeSlug(s) == s }

// splitInput splits a cookbook test run's `"input": {...}` into the
// params (every member but scenario) and the scenario, pretty-printed.
func splitInput(s string) (params, scenario string) {
	var call struct {
		Input map[string]json.RawMessage `json:"input"`
	}
	if json.Unmarshal([]byte("{"+s+"}"), &call) != nil || call.Input == nil {
		return "{}", "{}"
	}
	scenario = "{}"
	if sc, ok := call.Input["scenario"]; ok {
		scenario = prettyJSON(sc)
		delete(call.Input, "scenario")
	}
	raw, _ := json.Marshal(call.Input)
	return prettyJSON(json.RawMessage(raw)), scenario
}

// parseRecipeHelpers reads a guide's helpers block, one definition a line,
// into the create form's fields (options comma-separated, as typed there).
func parseRecipeHelpers(block string) []recipeHelper {
	var out []recipeHelper
	for _, line := range strings.Split(block, "\n") {
		var def map[string]any
		if json.Unmarshal([]byte(line), &def) != nil {
			continue
		}
		h := recipeHelper{Fields: map[string]string{}}
		for k, v := range def {
			switch v := v.(type) {
			case string:
				h.Fields[k] = v
			case []any:
				var parts []string
				for _, o := range v {
					parts = append(parts, fmt.Sprint(o))
				}
				h.Fields[k] = strings.Join(parts, ", ")
			default:
				h.Fields[k] = fmt.Sprint(v)
			}
		}
		h.ID, h.Kind = h.Fields["id"], h.Fields["kind"]
		out = append(out, h)
	}
	return out
}
