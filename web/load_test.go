package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLoadWarningsOnEveryPage: how the server fell behind under load is
// shown on every page, and nothing when it kept up.
func TestLoadWarningsOnEveryPage(t *testing.T) {
	f := newFixture(t, nil)
	var warnings []string
	srv := httptest.NewServer(Handler(f.e, Options{Logger: quiet(), Load: func() []string { return warnings }}))
	defer srv.Close()
	c := f.client()
	c.base = srv.URL
	for _, path := range []string{"/", "/runs", "/devices"} {
		if _, body, _ := c.get(path); strings.Contains(body, `class="load"`) {
			t.Fatalf("%s shows a load warning with none", path)
		}
	}
	warnings = []string{"12 firings recorded as summaries without their trace"}
	for _, path := range []string{"/", "/runs", "/devices"} {
		if _, body, _ := c.get(path); !strings.Contains(body, `<p class="load">12 firings recorded as summaries without their trace.</p>`) {
			t.Fatalf("%s does not show the load warning", path)
		}
	}
}
