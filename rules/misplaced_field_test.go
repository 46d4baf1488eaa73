package rules

import (
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
)

// TestMisplacedFieldSaysWhereItBelongs: a member of another kind is a
// known word in the wrong place, not a typo. "to" on an event trigger got
// `did you mean "id"?` (the nearest spelling); a new user needed "value".
func TestMisplacedFieldSaysWhereItBelongs(t *testing.T) {
	for _, tt := range []struct {
		trigger, field string
		want           []string
	}{
		{`{"id":"t","event":"bedroom_remote.action","to":"double"}`, "to", []string{`"to" belongs to state triggers`, "value"}},
		{`{"id":"t","state":"hall_motion.occupancy","value":true}`, "value", []string{`"value" belongs to`, "to"}},
		{`{"id":"t","event":"bedroom_remote.action","valeu":"double"}`, "valeu", []string{`did you mean "value"?`}},
	} {
		src := `{"name":"c","triggers":[` + tt.trigger + `],"steps":[{"id":"x","stop":""}]}`
		_, ds, err := decode.Decode([]byte(src), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].Code != core.CodeUnknownField || ds[0].Path != "/triggers/0/"+tt.field {
			t.Errorf("%s: want one unknown_field at /triggers/0/%s, got %s", tt.trigger, tt.field, diagString(ds))
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(ds[0].Hint, w) {
				t.Errorf("%s: hint %q lacks %q", tt.trigger, ds[0].Hint, w)
			}
		}
	}
}

// TestBoundNamingAnEntrySaysHowToCompare: "above": "humidity_limit.state"
// (an entry, as a Home Assistant user writes it) is refused with how to
// compare two entries, not only "must be a number".
func TestBoundNamingAnEntrySaysHowToCompare(t *testing.T) {
	src := `{"name":"c","triggers":[{"id":"t","state":"outdoor_weather.humidity","above":"humidity_limit.state"}],"steps":[{"id":"x","stop":""}]}`
	_, ds, err := decode.Decode([]byte(src), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Code != core.CodeTypeMismatch || ds[0].Path != "/triggers/0/above" || !strings.Contains(ds[0].Hint, "state('a.humidity') > state('b.state')") {
		t.Fatalf("want one type_mismatch at /triggers/0/above with how to compare, got %s", diagString(ds))
	}
}
