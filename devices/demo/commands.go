package demo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// coerce checks v against the expose and returns the canonical value. cur
// is the current value, used by value_toggle.
func (e *expose) coerce(v, cur any) (any, error) {
	switch e.Type {
	case "binary":
		return e.coerceBinary(v, cur)
	case "numeric":
		return e.coerceNumeric(v)
	case "enum":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want one of %v, got %v", e.Values, v)
		}
		for _, x := range e.Values {
			if strings.EqualFold(x, s) {
				return x, nil
			}
		}
		return nil, fmt.Errorf("want one of %v, got %q", e.Values, s)
	case "text":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("want text, got %v", v)
	}
	return nil, fmt.Errorf("cannot set a %s", e.Type)
}

func sameValue(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return strings.EqualFold(as, bs)
	}
	return a == b
}

func (e *expose) coerceBinary(v, cur any) (any, error) {
	switch {
	case sameValue(v, e.ValueOn):
		return e.ValueOn, nil
	case sameValue(v, e.ValueOff):
		return e.ValueOff, nil
	case e.ValueToggle != nil && sameValue(v, e.ValueToggle):
		if sameValue(cur, e.ValueOn) {
			return e.ValueOff, nil
		}
		return e.ValueOn, nil
	}
	if e.ValueToggle != nil {
		return nil, fmt.Errorf("want %v, %v or %v, got %v", e.ValueOn, e.ValueOff, e.ValueToggle, v)
	}
	return nil, fmt.Errorf("want %v or %v, got %v", e.ValueOn, e.ValueOff, v)
}

func (e *expose) coerceNumeric(v any) (any, error) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", x)
		}
		f = p
	default:
		return nil, fmt.Errorf("want a number, got %v", v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("want a finite number")
	}
	if e.ValueStep != nil && *e.ValueStep > 0 {
		f = math.Round(f / *e.ValueStep) * *e.ValueStep
	}
	if e.integer {
		f = math.Round(f)
	}
	if (e.ValueMin != nil && f < *e.ValueMin) || (e.ValueMax != nil && f > *e.ValueMax) {
		return nil, fmt.Errorf("%v is out of range [%v, %v]", v, deref(e.ValueMin), deref(e.ValueMax))
	}
	return f, nil
}

func deref(p *float64) any {
	if p == nil {
		return "-"
	}
	return *p
}

// rejection is one key of a command that was not applied.
type rejection struct {
	key, reason string
}

// applySet applies a Zigbee2MQTT set command to d: only settable exposed
// properties with valid values are applied, everything else is reported
// back. It returns whether anything was applied.
func (d *device) applySet(patch map[string]any) (bool, []rejection) {
	var rejected []rejection
	next := map[string]any{}
	for k, v := range patch {
		e := d.props[k]
		switch {
		case e == nil:
			rejected = append(rejected, rejection{k, "no such property"})
			continue
		case e.Access&accessSettable == 0:
			rejected = append(rejected, rejection{k, "not settable"})
			continue
		}
		val, err := e.coerce(v, d.state[k])
		if err != nil {
			rejected = append(rejected, rejection{k, err.Error()})
			continue
		}
		next[k] = val
	}
	if len(next) == 0 {
		return false, rejected
	}
	for k, v := range next {
		d.state[k] = v
	}
	d.sideEffects(next)
	return true, rejected
}

// sideEffects makes the state consistent after a command, as the real
// device would report it.
func (d *device) sideEffects(set map[string]any) {
	switch d.kind {
	case "light":
		if b, ok := set["brightness"].(float64); ok {
			if _, hasState := set["state"]; !hasState {
				d.state["state"] = onOff(b > 0)
			}
		}
	case "switch":
		if p, ok := set["power"].(float64); ok {
			d.drawLevel = p
		}
		switch set["state"] {
		case "OFF":
			d.state["power"] = 0.0
		case "ON":
			if p, _ := d.state["power"].(float64); p == 0 {
				d.state["power"], d.drawLevel = 60.0, 60.0
			}
		}
	case "lock":
		switch set["state"] {
		case "LOCK":
			d.state["lock_state"] = "locked"
		case "UNLOCK":
			d.state["lock_state"] = "unlocked"
		}
	case "cover":
		d.coverEffects(set)
	case "climate":
		d.updateRunningState()
	}
}

func onOff(on bool) string {
	if on {
		return "ON"
	}
	return "OFF"
}

// coverEffects moves the cover at once: OPEN to 100, CLOSE to 0, STOP where
// it is; the reported state follows the position like Zigbee2MQTT's.
func (d *device) coverEffects(set map[string]any) {
	switch set["state"] {
	case "OPEN":
		d.state["position"] = 100.0
	case "CLOSE":
		d.state["position"] = 0.0
	}
	if p, ok := d.state["position"].(float64); ok {
		d.state["state"] = "CLOSE"
		if p > 0 {
			d.state["state"] = "OPEN"
		}
	}
}

func (d *device) updateRunningState() {
	sp, _ := d.state["occupied_heating_setpoint"].(float64)
	t, _ := d.state["local_temperature"].(float64)
	if d.state["system_mode"] != "off" && t < sp-0.2 {
		d.state["running_state"] = "heat"
	} else {
		d.state["running_state"] = "idle"
	}
}
