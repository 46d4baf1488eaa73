package helpers

import (
	"encoding/json"

	"github.com/pilothouse/pilothouse/internal/cause"
)

// A timer's finish is the doing of whoever started it: its logbook line
// is filed under that principal and rule, as the start's was (attacker
// round 20: a guest rule's timer wrote its finish into the devices'
// share of the logbook). The starter is kept with the timer, and stored
// with its value under startedByKey, a member no kind's value has, so a
// finish after a restart is filed the same way.
const startedByKey = "started_by"

// startedBy is who a helper of definition d holding value v counts as
// started by after a change c caused: c for a timer left active or
// paused, else no one.
func startedBy(d *Def, v Value, c cause.Cause) cause.Cause {
	if d.Kind != Timer || toString(v["state"]) == TimerIdle {
		return cause.Cause{}
	}
	return c
}

// encodeValue is value v as stored, with who started it (by).
func encodeValue(v Value, by cause.Cause) ([]byte, error) {
	if by == (cause.Cause{}) {
		return json.Marshal(v)
	}
	out := make(Value, len(v)+1)
	for k, x := range v {
		out[k] = x
	}
	out[startedByKey] = map[string]string{"who": by.Who, "rule": by.Rule}
	return json.Marshal(out)
}

// takeStartedBy removes who started it from a stored value v, and
// returns it.
func takeStartedBy(v Value) cause.Cause {
	m, _ := v[startedByKey].(map[string]any)
	delete(v, startedByKey)
	who, _ := m["who"].(string)
	rule, _ := m["rule"].(string)
	return cause.Cause{Who: who, Rule: rule}
}
