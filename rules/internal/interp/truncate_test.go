package interp

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTruncateHugeValueWithoutEncodingIt: a summary of a value past
// encodeWhole (64 states of 200 KB a selector read) says the same size and
// preview as encoding it would, without encoding it: attacker round 17
// took the server to 3.9 GB with one such condition firing 20 times a
// second.
func TestTruncateHugeValueWithoutEncodingIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"64 states of 200 KB", func() any {
			m := map[string]any{}
			for i := range 64 {
				m[fmt.Sprintf("sensor_%02d.v", i)] = strings.Repeat("é", 100_000)
			}
			return m
		}()},
		{"a list of lists", []any{[]any{strings.Repeat("x", 300_000)}, "b"}},
		{"many short members", func() any {
			l := make([]any, 50_000)
			for i := range l {
				l[i] = i
			}
			return l
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := MarshalCompact(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			want := string(whole)
			for i := range want {
				if utf8.RuneCountInString(want[:i]) == TruncatePreview {
					want = want[:i]
					break
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, _ := truncateOutput(tc.v).(map[string]any)
			runtime.ReadMemStats(&after)
			if got == nil || got["bytes"] != len(whole) || got["preview"] != want {
				t.Fatalf("got bytes %v preview %.40q…, want %d and %.40q…", got["bytes"], got["preview"], len(whole), want)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(whole))/4 {
				t.Errorf("summarising allocated %d bytes for a %d-byte value", n, len(whole))
			}
		})
	}
}
