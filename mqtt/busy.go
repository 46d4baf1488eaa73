package mqtt

import (
	"sync"
	"time"
)

// BusyWindow is how far back Delivery.Busy looks.
const BusyWindow = 5 * time.Second

// busySlots is the number of one-second slots a busyMeter keeps: the
// window plus the second in progress.
const busySlots = int64(BusyWindow/time.Second) + 1

// busyMeter measures the fraction of wall time one subscription's handler
// spends running, over the last BusyWindow: busy time per second in a ring
// of one-second slots, plus the call in progress (so a handler that blocks
// shows as busy while it blocks, not only once it returns). A handler is
// never called twice at once, so begin and end alternate.
type busyMeter struct {
	mu      sync.Mutex
	base    time.Time // monotonic origin of the slots
	running int64     // ns since base when the call in progress began; -1 when idle
	slot    [busySlots]int64
	slotSec [busySlots]int64 // the second (since base) each slot holds
}

func newBusyMeter() *busyMeter {
	m := &busyMeter{base: time.Now(), running: -1}
	for i := range m.slotSec {
		m.slotSec[i] = -1
	}
	return m
}

func (m *busyMeter) now() int64 { return int64(time.Since(m.base)) }

// begin notes that a handler call starts.
func (m *busyMeter) begin() {
	now := m.now()
	m.mu.Lock()
	m.running = now
	m.mu.Unlock()
}

// end notes that the call in progress returned.
func (m *busyMeter) end() {
	now := m.now()
	m.mu.Lock()
	if m.running >= 0 {
		m.add(m.running, now)
	}
	m.running = -1
	m.mu.Unlock()
}

// add spreads the busy span [from, to) over the slots it covers (only the
// part the ring can hold).
func (m *busyMeter) add(from, to int64) {
	const sec = int64(time.Second)
	from = max(from, (to/sec-busySlots+1)*sec)
	for from < to {
		s := from / sec
		upto := min((s+1)*sec, to)
		i := s % busySlots
		if m.slotSec[i] != s {
			m.slotSec[i], m.slot[i] = s, 0
		}
		m.slot[i] += upto - from
		from = upto
	}
}

// fraction is the busy fraction (0..1) over the whole seconds of the
// window before now and the second in progress (or since the meter
// started, when that is shorter).
func (m *busyMeter) fraction() float64 { return m.fractionAt(m.now()) }

func (m *busyMeter) fractionAt(now int64) float64 {
	const sec = int64(time.Second)
	start := max(0, (now/sec-busySlots+2)*sec)
	if now <= start {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var busy int64
	for i, s := range m.slotSec {
		if s >= start/sec {
			busy += m.slot[i]
		}
	}
	if m.running >= 0 {
		busy += now - max(m.running, start)
	}
	return min(1, float64(busy)/float64(now-start))
}

// meters is a client's busy meters, one per subscription.
type meters struct {
	mu  sync.Mutex
	all []*busyMeter
}

func (ms *meters) add() *busyMeter {
	m := newBusyMeter()
	ms.mu.Lock()
	ms.all = append(ms.all, m)
	ms.mu.Unlock()
	return m
}

// busiest is the highest busy fraction of the meters.
func (ms *meters) busiest() float64 {
	ms.mu.Lock()
	all := ms.all
	ms.mu.Unlock()
	var b float64
	for _, m := range all {
		b = max(b, m.fraction())
	}
	return b
}
