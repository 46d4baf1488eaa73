package main

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/pilothouse/pilothouse/rules"
)

// limitKey is the configuration key of a rules.Limits field: MaxRunBytes
// → max_run_bytes.
func limitKey(field string) string {
	var b strings.Builder
	for i, r := range field {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestEveryLimitIsConfigurable: each field of rules.Limits has its key in
// the limits section of the configuration file, takes a value there, and
// has its row in docs/configuration.md (a limit added to the table but
// not wired would be silently fixed at its default).
func TestEveryLimitIsConfigurable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	lt := reflect.TypeOf(rules.Limits{})
	var body strings.Builder
	body.WriteString("limits:\n")
	for i := range lt.NumField() {
		f := lt.Field(i)
		key := limitKey(f.Name)
		if f.Type == reflect.TypeOf(time.Duration(0)) {
			fmt.Fprintf(&body, "  %s: %ds\n", key, i+1)
		} else {
			fmt.Fprintf(&body, "  %s: %d\n", key, 1000+i)
		}
		if !strings.Contains(string(doc), "| `"+key+"` |") {
			t.Errorf("docs/configuration.md has no row for limits.%s", key)
		}
	}
	c, _, err := loadYAML(t, body.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, body.String())
	}
	lv := reflect.ValueOf(c.Limits)
	for i := range lt.NumField() {
		v := lv.Field(i)
		var got int64
		switch v.Kind() {
		case reflect.Uint:
			got = int64(v.Uint())
		default:
			got = v.Int()
		}
		want := int64(1000 + i)
		if lt.Field(i).Type == reflect.TypeOf(time.Duration(0)) {
			want = int64(time.Duration(i+1) * time.Second)
		}
		if got != want {
			t.Errorf("limits.%s = %d, want %d", limitKey(lt.Field(i).Name), got, want)
		}
	}
}
