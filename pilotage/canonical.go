package pilotage

import "encoding/json"

// CanonicalJSON re-encodes JSON with sorted keys (encoding/json sorts map
// keys), so equal values hash equally: program_refs, entry schemas,
// idempotency keys and approvals are compared in this form. Input that is
// not JSON is returned as it is.
func CanonicalJSON(raw json.RawMessage) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}
