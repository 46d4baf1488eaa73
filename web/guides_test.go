package web

import (
	"net/http"
	"testing"
)

// TestGuidesPages: a person reads the language guides an assistant gets
// from pilotage_learn: the list, a guide's headings, code and text, a
// 404 for a guide that does not exist; the editor links to them.
func TestGuidesPages(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	code, body, _ := c.get("/guides")
	if code != http.StatusOK {
		t.Fatalf("/guides: %d", code)
	}
	mustContain(t, "guides list", body, `id="guides"`, `href="/guides/triggers"`, `href="/guides/cookbook"`, `href="/guides/helpers"`)
	code, body, _ = c.get("/guides/triggers")
	if code != http.StatusOK {
		t.Fatalf("/guides/triggers: %d", code)
	}
	mustContain(t, "triggers guide", body, `id="guide"`, "<h2>", `<pre class="mono">`, "&#34;state&#34;")
	mustNotContain(t, "triggers guide", body, "```", "<h2>## ")
	if code, _, _ := c.get("/guides/nope"); code != http.StatusNotFound {
		t.Fatalf("/guides/nope: %d", code)
	}
	_, body, _ = c.get("/editor")
	mustContain(t, "editor", body, `href="/guides"`)
}

// TestGuideBlocks: headings, fenced code (kept verbatim, blank lines too)
// and paragraphs.
func TestGuideBlocks(t *testing.T) {
	got := guideBlocks("# Title\n\nSome text\nmore.\n\n## Part\n```json\n{\"a\": 1}\n\n  <b>\n```\nlast")
	want := []guideBlock{{"h2", "Title"}, {"p", "Some text\nmore."}, {"h2", "Part"}, {"pre", "{\"a\": 1}\n\n  <b>"}, {"p", "last"}}
	if len(got) != len(want) {
		t.Fatalf("%d blocks %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
