package engine

import (
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/uptime"
)

// Downtime is a span of time the server was not running.
type Downtime = uptime.Downtime

// Downtimes lists the recorded spans in [from, to) during which the server
// was not running, oldest first, cut to the range.
func (e *Engine) Downtimes(from, to time.Time) []Downtime {
	if e.up == nil {
		return nil
	}
	return e.up.Downtimes(from, to)
}
