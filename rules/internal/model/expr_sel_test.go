package model

import (
	"slices"
	"testing"
)

// TestCollectSels: the selector objects an expression reads are known
// from its source, spelled one way for trace reads; an object with a
// computed or unknown member is left to the validator.
func TestCollectSels(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"since({area: 'hall', property: 'occupancy'}) > 60", []string{`since({area: "hall", property: "occupancy"})`}},
		{`any(states({property: "contact", tag: "class:door", type: 'binary_sensor'}), # == false) && since('front_door.contact') > 1`,
			[]string{`states({type: "binary_sensor", tag: "class:door", property: "contact"})`}},
		{"len(states({area: trigger.entity, property: 'occupancy'})) > 0", nil},
		{"len(states({room: 'hall', property: 'occupancy'})) > 0", nil},
		{"since('hall_motion.occupancy') > 60", nil},
	}
	for _, tt := range tests {
		x, err := CompileExpr(tt.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		var got []string
		for _, s := range x.Sels {
			got = append(got, s.Text)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Sels %q, want %q", tt.src, got, tt.want)
		}
	}
}

// TestSelReadersWithoutWorld: an Env without a World (params folding)
// reads nothing rather than failing.
func TestSelReadersWithoutWorld(t *testing.T) {
	x, err := CompileExpr("states({area: 'hall', property: 'occupancy'}) == nil && since({area: 'hall', property: 'occupancy'}) == nil", 0)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := x.EvalBool(&Env{})
	if err != nil || !ok {
		t.Fatalf("got %v %v, want true", ok, err)
	}
}
