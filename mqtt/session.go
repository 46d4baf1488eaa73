package mqtt

import (
	"errors"
	"sync"
	"time"
)

// maxInFlight bounds the packets waiting for the broker's answer
// (publishes, subscribes, unsubscribes): every packet identifier but one.
const maxInFlight = 0xFFFF - 1

// errTooManyInFlight: maxInFlight packets wait for their acknowledgement.
var errTooManyInFlight = errors.New("mqtt: too many publishes waiting for the broker's acknowledgement")

// session is the client's side of the MQTT session (§4.1): the packet
// identifiers in use, the QoS 1 publishes waiting for their PUBACK, the
// SUBSCRIBEs and UNSUBSCRIBEs waiting for their answer, and the QoS 2
// messages received whose PUBREL has not come. It outlives a connection:
// on a persistent session the unacknowledged publishes are sent again
// (with DUP) when the broker still has the session after a reconnect.
type session struct {
	mu         sync.Mutex
	cur        *conn // where packets are written; nil while disconnected
	persistent bool
	next       uint16
	seq        uint64                 // order of claims, for resends
	pending    map[uint16]*waiter     // QoS 1 publishes waiting for their PUBACK
	answers    map[uint16]chan []byte // SUBSCRIBE/UNSUBSCRIBE waiting for their ack
	inbound2   map[uint16]struct{}    // QoS 2 publishes received, PUBREL not yet
	expiry     expiry                 // the waiters' deadlines
}

// waiter is a QoS 1 publish waiting for its PUBACK (QoS 2: its PUBCOMP): to is given the
// result once, unless the connection was lost first (to is then nil: the
// caller was told, and the packet waits to be sent again).
type waiter struct {
	to  *asyncPublish
	due time.Time // when to is given errExpired
	pkt []byte    // the PUBLISH (QoS 2, once received: the PUBREL), for a resend
	seq uint64
}

// idFree reports whether id is unused; s.mu is held.
func (s *session) idFree(id uint16) bool {
	if id == 0 {
		return false
	}
	_, p := s.pending[id]
	_, a := s.answers[id]
	return !p && !a
}

// nextID claims a free packet identifier; s.mu is held.
func (s *session) nextID() (uint16, error) {
	if len(s.pending)+len(s.answers) >= maxInFlight {
		return 0, errTooManyInFlight
	}
	for {
		s.next++
		if s.idFree(s.next) {
			return s.next, nil
		}
	}
}

// claim registers w for a QoS 1 PUBLISH pkt on the current connection,
// writes the claimed identifier into pkt at idAt and returns the
// connection to write it to.
func (s *session) claim(w *waiter, pkt []byte, idAt int) (*conn, uint16, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil, 0, ErrNotConnected
	}
	id, err := s.nextID()
	if err != nil {
		return nil, 0, err
	}
	pkt[idAt], pkt[idAt+1] = byte(id>>8), byte(id)
	if s.pending == nil {
		s.pending = make(map[uint16]*waiter)
	}
	s.seq++
	w.pkt, w.seq = pkt, s.seq
	s.pending[id] = w
	s.expiry.watch(w.due, s.expire)
	return s.cur, id, nil
}

// connection returns the current connection, nil while disconnected.
func (s *session) connection() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// forget gives up waiting for id's PUBACK (its write failed).
func (s *session) forget(id uint16, w *waiter) {
	s.mu.Lock()
	if s.pending[id] == w {
		delete(s.pending, id)
	}
	s.mu.Unlock()
}

// take removes id's waiter if it is still w and still has its caller, and
// reports whether it was: whoever takes a waiter gives it its one result.
func (s *session) take(id uint16, w *waiter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[id] != w || w.to == nil {
		return false
	}
	delete(s.pending, id)
	return true
}

// acked completes the publish waiting for id's PUBACK, if one still
// waits (it may have given up, or its caller heard of a lost connection).
func (s *session) acked(id uint16) {
	s.mu.Lock()
	w, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if ok && w.to != nil {
		w.to.result(nil)
	}
}

// lost detaches the connection k: every publish waiting for its PUBACK
// hears errLostUnacked (on a persistent session its packet stays, to be
// sent again), and every SUBSCRIBE or UNSUBSCRIBE hears nothing more.
func (s *session) lost(k *conn) {
	s.mu.Lock()
	if s.cur != k {
		s.mu.Unlock()
		return
	}
	s.cur = nil
	var told []*asyncPublish
	for id, w := range s.pending {
		if w.to != nil {
			told = append(told, w.to)
			w.to = nil
		}
		if !s.persistent {
			delete(s.pending, id)
		}
	}
	for id, ch := range s.answers {
		close(ch)
		delete(s.answers, id)
	}
	s.expiry.stop()
	s.mu.Unlock()
	for _, a := range told {
		a.result(errLostUnacked)
	}
}

// errExpired is what an asynchronous publish's waiter is given when its due
// time passed before its PUBACK came.
var errExpired = errors.New("mqtt: acknowledgement overdue")

// expiry is the one timer behind the due times of a connection's
// asynchronous publishes: armed for the earliest one, it gives every
// overdue waiter errExpired and re-arms for the next. A publish answered in
// time costs no timer of its own. Guarded by the session's mu.
type expiry struct {
	t  *time.Timer
	at time.Time // what t is armed for; zero: not armed
}

// watch makes sure the timer goes off by due.
func (x *expiry) watch(due time.Time, expire func()) {
	switch {
	case x.t == nil:
		x.t = time.AfterFunc(time.Until(due), expire)
	case x.at.IsZero() || due.Before(x.at):
		x.t.Reset(time.Until(due))
	default:
		return
	}
	x.at = due
}

func (x *expiry) stop() {
	if x.t != nil {
		x.t.Stop()
	}
	x.at = time.Time{}
}

// expire gives the overdue publishes errExpired (their packets stay in
// flight: the broker may still answer) and re-arms the timer for the
// earliest one left.
func (s *session) expire() {
	now := time.Now()
	var overdue []*asyncPublish
	var next time.Time
	s.mu.Lock()
	for _, w := range s.pending {
		switch {
		case w.to == nil:
		case !w.due.After(now):
			overdue = append(overdue, w.to)
			w.to = nil
		case next.IsZero() || w.due.Before(next):
			next = w.due
		}
	}
	s.expiry.at = time.Time{}
	if !next.IsZero() && s.cur != nil {
		s.expiry.watch(next, s.expire)
	}
	s.mu.Unlock()
	for _, a := range overdue {
		a.result(errExpired)
	}
}
