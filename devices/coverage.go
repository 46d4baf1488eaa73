package devices

import "github.com/pilothouse/pilothouse/devices/internal/model"

// Coverage counts the catalog's devices by how fully they are modelled.
// A partial or unmodelled device's entry is tagged (partial, unmodelled)
// and its description says what is missing; the catalog logs it once per
// definition. The server shows the counts on /healthz.
type Coverage struct {
	Devices    int `json:"devices"`
	Partial    int `json:"partial"`    // some exposes or entities could not be modelled
	Unmodelled int `json:"unmodelled"` // nothing could (e.g. no Zigbee2MQTT definition)
}

// count adds a device: partial when its source marked it so or when one of
// its states cannot be read (an unsupported Home Assistant template).
func (cv *Coverage) count(s *model.Spec) { cv.add(s, 1) }

// uncount takes a device out again.
func (cv *Coverage) uncount(s *model.Spec) { cv.add(s, -1) }

func (cv *Coverage) add(s *model.Spec, n int) {
	if s.NoDevice || s.Local {
		return
	}
	cv.Devices += n
	switch {
	case s.Fidelity == model.FidelityNone:
		cv.Unmodelled += n
	case s.Fidelity == model.FidelityPartial:
		cv.Partial += n
	default:
		for _, st := range s.States {
			if st.Unsupported != "" {
				cv.Partial += n
				return
			}
		}
	}
}

// Coverage returns how fully the current catalog's devices are modelled.
// It takes no lock: /healthz must answer while a big device list is
// being committed.
func (c *Catalog) Coverage() Coverage {
	if p := c.coverage.Load(); p != nil {
		return *p
	}
	return Coverage{}
}
