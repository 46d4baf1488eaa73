package mqtt

// Publishes sent again with DUP when a persistent session resumes (§4.4),
// or dropped when the broker no longer has the session.

import (
	"cmp"
	"slices"
)

// resume prepares a new connection: with the session still at the broker
// it returns the unacknowledged publishes to send again first, in the
// order they were first sent and marked DUP (§4.4); without it they are
// dropped (the broker forgot them with the session: counted in the
// return) and so are the QoS 2 messages still waiting for their PUBREL.
func (s *session) resume(present bool) (resend [][]byte, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !present {
		dropped = len(s.pending)
		clear(s.pending)
		clear(s.inbound2)
		return nil, dropped
	}
	ws := make([]*waiter, 0, len(s.pending))
	for _, w := range s.pending {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *waiter) int { return cmp.Compare(a.seq, b.seq) })
	for _, w := range ws {
		p := slices.Clone(w.pkt)
		if p[0]>>4 == publishType {
			p[0] |= dupBit
		}
		resend = append(resend, p)
	}
	return resend, 0
}
