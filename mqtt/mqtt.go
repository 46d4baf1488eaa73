// Package mqtt owns the MQTT connection (Client, its own MQTT 3.1.1
// client: connect, reconnect with backoff, persistent session,
// resubscribe, publish, over TCP, TLS or WebSocket) and the embedded
// broker (mochi-mqtt) that makes Pilothouse run with zero setup, with its
// in-process client (Inline).
package mqtt

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Message is one received MQTT message.
type Message struct {
	Topic    string
	Payload  []byte
	Retained bool
}

// Handler receives messages of a subscription, in order. It should be
// fast: *Client runs it on the subscription's own delivery goroutine with a
// bounded queue in front, and a full queue holds the connection back (it
// may call Publish).
type Handler func(Message)

// PubSub is what the rest of the program needs from a connection. *Client
// implements it; tests may use a real embedded broker through *Client too.
type PubSub interface {
	// Subscribe registers h for filter; the subscription is remembered and
	// re-established after every reconnect.
	Subscribe(filter string, qos byte, h Handler) error
	// Publish sends one message. While disconnected it returns
	// ErrNotConnected at once: commands are refused, never silently dropped.
	Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error
}

// ErrNotConnected is returned by Publish while the broker is unreachable.
var ErrNotConnected = errors.New("mqtt: not connected to the broker")

// ErrNotAcknowledged marks a QoS 1 or 2 publish that was written to the
// broker but not acknowledged: PublishTimeout passed, or the connection
// was lost first (the error then also wraps ErrNotConnected). The broker
// may have it and deliver it later (a frozen broker, once it thaws), so
// sending it again may apply it twice.
var ErrNotAcknowledged = errors.New("mqtt: not acknowledged by the broker (may still arrive)")

// Filters is a subscription to a set of topic filters that changes while
// it runs: one handler, one queue, the messages of all its filters in the
// order they arrive, each message once even when several of its filters
// match it.
type Filters interface {
	// Set makes filters the subscribed set: it subscribes the new ones
	// (their retained messages follow) and unsubscribes the ones gone, and
	// returns once the broker has acknowledged. While disconnected the set
	// is only remembered (subscribed on connect) and Set returns nil. A
	// filter the broker refuses or does not acknowledge stays in the set
	// and is subscribed again with backoff; the connection's Health
	// reports it meanwhile.
	Set(filters []string) error
}

// SetSubscriber is a connection that subscribes filter sets itself (one
// SUBSCRIBE for many filters, UNSUBSCRIBE for the ones gone). *Client and
// *Inline are. A set's handler runs on the goroutine that delivers the
// message (the connection's, or the embedded broker's publisher) whenever
// nothing is queued for it, which saves a hand-over per message and holds
// the connection back while it runs; under a burst the messages queue and
// its delivery goroutine takes over. So it must never wait for the
// connection: no QoS 1 or 2 Publish (that waits for an acknowledgement
// the connection would deliver), no Subscribe or Set.
type SetSubscriber interface {
	SubscribeSet(qos byte, h Handler) (Filters, error)
}

// SubscribeSet returns a filter set on conn, empty until its first Set.
// A conn that is no SetSubscriber gets one Subscribe per new filter, and
// filters removed from the set stay subscribed (their messages still reach
// h).
func SubscribeSet(conn PubSub, qos byte, h Handler) (Filters, error) {
	if ss, ok := conn.(SetSubscriber); ok {
		return ss.SubscribeSet(qos, h)
	}
	return &plainSet{conn: conn, qos: qos, h: h, done: map[string]bool{}}, nil
}

// plainSet is SubscribeSet over Subscribe.
type plainSet struct {
	mu   sync.Mutex
	conn PubSub
	qos  byte
	h    Handler
	done map[string]bool
}

func (p *plainSet) Set(filters []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, f := range filters {
		if p.done[f] {
			continue
		}
		if err := p.conn.Subscribe(f, p.qos, p.h); err != nil {
			errs = append(errs, err)
			continue
		}
		p.done[f] = true
	}
	return errors.Join(errs...)
}

// Delivery says how the deliveries of a connection to its handlers went.
type Delivery struct {
	// Backpressured counts messages that found their handler's queue full
	// and waited for room (holding the connection back meanwhile).
	Backpressured uint64
	// Waited is the total time those messages waited.
	Waited time.Duration
	// Dropped counts messages lost because their handler was stuck for the
	// whole stall limit.
	Dropped uint64
	// Oversized counts QoS 0 and 1 messages over Options.MaxMessageBytes,
	// skipped as they arrived (never held in memory, delivered to no
	// handler; a QoS 1 one acknowledged).
	Oversized uint64
	// Unread is how many bytes from the broker wait in the connection now,
	// received but not handled yet (Client.Unread; 0 in process).
	Unread int
	// Busy is the fraction of the last BusyWindow (0..1) the busiest
	// handler spent running: near 1, the handler is the bottleneck and
	// messages queue up (in its queue, the connection and the broker) even
	// when none waits long enough to count as backpressure.
	Busy float64
}
