package rules

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func goldenUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// TestValidateGolden validates testdata/validate/<name>.json against the
// demo catalog and compares the diagnostics and the plan with
// <name>.diag.golden.json and <name>.plan.golden.json (null when invalid).
// Run with -update to rewrite them. Sun triggers see a configured location
// unless the name contains "no_location".
func TestValidateGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/validate/*.json")
	if err != nil {
		t.Fatal(err)
	}
	cat := demoCatalog()
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(f, ".json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Validate(raw, cat, ValidateOptions{HasLocation: !strings.Contains(name, "no_location")})
			if err != nil {
				t.Fatal(err)
			}
			checkClosed(t, res.Diagnostics)
			if res.Valid != (res.Plan != nil) || res.Valid != (res.Compiled != nil) {
				t.Errorf("valid=%v but plan=%v compiled=%v", res.Valid, res.Plan != nil, res.Compiled != nil)
			}
			compareGolden(t, name+".diag.golden.json", res.Diagnostics)
			compareGolden(t, name+".plan.golden.json", res.Plan)
		})
	}
	if n < 5 {
		t.Errorf("only %d golden programs", n)
	}
}

func compareGolden(t *testing.T, path string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if goldenUpdate() {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Errorf("%s differs (run with -update to accept):\n%s", path, buf.String())
	}
}
