package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/validate"

	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// FuzzValidate feeds random bytes to the decoder and validator: they must
// never panic or hang, findings must come from the closed table, and the
// only error is a resource_exhausted request error.
func FuzzValidate(f *testing.F) {
	files, _ := filepath.Glob("testdata/validate/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 8<<10 {
			f.Add(b)
		}
	}
	for _, g := range Guides() {
		for _, src := range guidePrograms(g.Body) {
			f.Add([]byte(src))
		}
	}
	for _, tc := range codeCases {
		f.Add([]byte(tc.src))
	}
	f.Add([]byte(`{"name":"x","triggers":[{"id":"a","cron":"TZ= 0 0 * * *"}],"steps":[{"id":"s","delay":"{{ '}}' }}"}]}`))
	f.Add([]byte("\"\\ud800\\udc00\""))
	cat := demoCatalog()
	lim := DefaultLimits
	lim.ValidateWall = 2 * time.Second
	f.Fuzz(func(t *testing.T, raw []byte) {
		start := time.Now()
		res, err := Validate(raw, cat, ValidateOptions{Limits: lim, HasLocation: len(raw)%2 == 0, Cache: itCache})
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("validation took %v", d)
		}
		if err != nil {
			var re *pilotage.RequestError
			if !errors.As(err, &re) || re.Kind != pilotage.ErrResourceExhausted {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		checkClosed(t, res.Diagnostics)
		if res.Diagnostics == nil {
			t.Fatal("nil diagnostics")
		}
		if res.Valid != (res.Plan != nil && res.Compiled != nil) {
			t.Fatalf("valid=%v plan=%v", res.Valid, res.Plan != nil)
		}
		if res.Valid && core.HasErrors(res.Diagnostics) {
			t.Fatal("valid with errors")
		}
		if _, _, err := decode.Decode(raw, lim); err != nil {
			var re *pilotage.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("Decode: %v", err)
			}
		}
		if res.Valid && len(res.Compiled.Params()) > 0 {
			fuzzBind(t, raw, res.Compiled, cat, lim)
		}
	})
}

// fuzzBind validates a valid program with params bound to an input made
// from it: every catalog param the first id of its kind, every other
// declared param a string no schema of a duration or number accepts.
func fuzzBind(t *testing.T, raw []byte, c *Compiled, cat *mapCatalog, lim Limits) {
	in := map[string]any{}
	for name := range validate.DeclaredParams(c.Params()) {
		in[name] = "3 minutes"
	}
	for _, r := range c.RefParams() {
		for _, id := range cat.IDs() {
			if e, _ := cat.Get(id); e.Kind == r.Kind {
				in[r.Name] = id
				break
			}
		}
	}
	res, err := Validate(raw, cat, ValidateOptions{Limits: lim, HasLocation: true, Cache: itCache, Bind: in})
	if err != nil {
		var re *pilotage.RequestError
		if !errors.As(err, &re) || re.Kind != pilotage.ErrResourceExhausted {
			t.Fatalf("bound: unexpected error %v", err)
		}
		return
	}
	checkClosed(t, res.Diagnostics)
	for _, d := range res.Diagnostics {
		if d.Severity == pilotage.SeverityError && d.Code != CodeInputBinding {
			t.Fatalf("bound: an error that is not input_binding: %+v", d)
		}
	}
}
