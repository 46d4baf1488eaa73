package mqtt

// QoS 2 both ways (§4.3.3, §4.4): the PUBREC, PUBREL and PUBCOMP that
// Publish at QoS 2 and a QoS 2 subscription exchange. Nothing in the server
// uses QoS 2; the event path never comes here.

// handleQoS2 takes a PUBREC, PUBREL or PUBCOMP from the broker.
func (c *Client) handleQoS2(k *conn, p packet) error {
	switch p.kind {
	case pubrecType:
		c.sess.releasing(p.id)
		return k.writePacket(encodeAck(pubrelType, p.id))
	case pubrelType:
		c.sess.released(p.id)
		return k.writePacket(encodeAck(pubcompType, p.id))
	}
	c.sess.acked(p.id) // PUBCOMP ends a QoS 2 publish as PUBACK a QoS 1 one
	return nil
}

// received2 records a QoS 2 PUBLISH and reports whether it is new (to be
// delivered): a resent one, before its PUBREL, was delivered already.
func (s *session) received2(id uint16) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.inbound2[id]; dup {
		return false
	}
	if s.inbound2 == nil {
		s.inbound2 = make(map[uint16]struct{})
	}
	s.inbound2[id] = struct{}{}
	return true
}

// releasing notes that the broker received id's QoS 2 PUBLISH (PUBREC):
// from now on the PUBREL is what is sent again after a reconnect (§4.3.3).
func (s *session) releasing(id uint16) {
	s.mu.Lock()
	if w, ok := s.pending[id]; ok {
		w.pkt = encodeAck(pubrelType, id)
	}
	s.mu.Unlock()
}

// released ends a QoS 2 delivery (its PUBREL came).
func (s *session) released(id uint16) {
	s.mu.Lock()
	delete(s.inbound2, id)
	s.mu.Unlock()
}
