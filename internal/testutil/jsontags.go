package testutil

import (
	"reflect"
	"strings"
)

// JSONTags lists struct v's fields with their json tags ("Name:tag ..."):
// a test of a hand-written encoder compares it with the fields the encoder
// handles, so a field added or retagged fails that test.
func JSONTags(v any) string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		out = append(out, rt.Field(i).Name+":"+rt.Field(i).Tag.Get("json"))
	}
	return strings.Join(out, " ")
}
