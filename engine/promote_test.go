package engine

import (
	"encoding/json"
	"testing"
)

// TestNoParamsSchemaIsCanonical: the shared schema of a program without
// params is what canonicalJSON makes of it (entry revisions depend on it).
func TestNoParamsSchemaIsCanonical(t *testing.T) {
	if got := string(canonicalJSON(json.RawMessage(`{"type":"object","additionalProperties":false}`))); got != string(noParamsSchema) {
		t.Fatalf("canonical %s, shared %s", got, noParamsSchema)
	}
}
