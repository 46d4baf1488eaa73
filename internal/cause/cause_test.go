package cause

import (
	"context"
	"testing"
)

func TestWithOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want Cause
	}{
		{"none", context.Background(), Cause{}},
		{"rule", With(context.Background(), "guest", "loop"), Cause{"guest", "loop"}},
		{"inner wins", With(With(context.Background(), "a", "r"), "b", ""), Cause{"b", ""}},
	} {
		if got := Of(tc.ctx); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
