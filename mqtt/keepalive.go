package mqtt

// The connection's keep-alive: the PINGREQs that keep a quiet connection
// open and make a silent broker answer.

import "time"

// keepAlive pings the broker (one PINGREQ) whenever a read has waited
// pingAfter for it, so that a live broker answers within the silence
// limit, and whenever nothing was written for half the MQTT keep-alive,
// so that the broker does not drop us; until the connection is closed.
func (k *conn) keepAlive() {
	t := time.NewTicker(pingAfter / 4)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-k.dead:
			return
		case now := <-t.C:
			waiting := k.w.waiting.Load()
			quiet := now.Sub(time.Unix(0, k.lastWrite.Load())) >= keepAlive/2
			stalled := waiting != 0 && now.Sub(time.Unix(0, waiting)) >= pingAfter
			if (quiet || stalled) && now.Sub(last) >= pingAfter {
				last = now
				_ = k.writePacket(pingreq)
			}
		}
	}
}
