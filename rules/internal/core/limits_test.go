package core

import (
	"reflect"
	"testing"
	"time"
)

// TestWithDefaultsCoversEveryLimit: an unset Limits gets every bound of
// DefaultLimits (a field added to Limits but not to WithDefaults fails).
func TestWithDefaultsCoversEveryLimit(t *testing.T) {
	if got := (Limits{}).WithDefaults(); !reflect.DeepEqual(got, DefaultLimits) {
		t.Errorf("Limits{}.WithDefaults() = %+v\nwant DefaultLimits %+v", got, DefaultLimits)
	}
	set := Limits{MaxRunBytes: 7, MaxWall: time.Second}.WithDefaults()
	if set.MaxRunBytes != 7 || set.MaxWall != time.Second {
		t.Errorf("set bounds overwritten: %+v", set)
	}
}
