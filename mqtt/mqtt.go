// Package mqtt owns the MQTT connection (eclipse/paho.mqtt.golang: connect,
// reconnect with backoff, resubscribe, publish) and the embedded broker
// (mochi-mqtt) that makes Pilothouse run with zero setup.
package mqtt

import (
	"context"
	"errors"
)

// Message is one received MQTT message.
type Message struct {
	Topic    string
	Payload  []byte
	Retained bool
}

// Handler receives messages of a subscription, in order. It must not block
// for long: *Client runs it on the subscription's own delivery goroutine
// with a bounded queue in front (it may call Publish).
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
