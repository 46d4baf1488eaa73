package main

import (
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/web"
)

// webHealth is what the web UI shows of the house's state: the broker and
// storage as /healthz reports them, and where discovery listens.
func (a *app) webHealth() web.Health {
	h := web.Health{Broker: web.RedactURL(a.cfg.Broker), Z2MBase: a.cfg.Z2MBase, HAPrefix: a.cfg.HAPrefix,
		Devices: a.devs.Coverage().Devices}
	if a.broker != nil {
		h.Broker, h.Embedded = a.broker.URL(), true
	}
	h.BrokerOK, h.BrokerReason = a.client.Health()
	if c, ok := a.client.(*mqtt.Client); ok {
		if o := c.Link().LastOutage; o != nil && !o.Ongoing {
			h.BrokerLostAt, h.BrokerAway = o.Start, time.Duration(o.Seconds*float64(time.Second))
		}
	}
	ws := a.store.WriteStatus()
	h.StorageOK, h.StorageError, h.StorageSince = ws.OK, ws.Error, ws.Since
	return h
}
