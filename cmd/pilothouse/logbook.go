package main

import "github.com/pilothouse/pilothouse/mqtt"

// logBroker records in the logbook when the connection to an external
// broker is lost and when it comes back (the embedded broker's inline
// client is never cut off).
func (a *app) logBroker() {
	c, ok := a.client.(*mqtt.Client)
	if !ok {
		return
	}
	broker := a.cfg.Broker
	c.OnConnectionChange(func(up bool) {
		if up {
			a.eng.Note("broker", "connected to the broker "+broker+" again")
			return
		}
		why := "unknown reason"
		if o := c.Link().LastOutage; o != nil && o.Reason != "" {
			why = o.Reason
		}
		a.eng.Note("broker", "lost the connection to the broker "+broker+": "+why)
	})
}
