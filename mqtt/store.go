package mqtt

import (
	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// copyingStore is paho's memory store, except that Get returns a copy of
// a stored PUBLISH. paho's resume (after a reconnect) reads every stored
// packet with Get and sets its DUP flag while a publish made on the new
// connection may be writing that same packet: a data race inside paho
// (seen by the race detector when a firing's command met a broker
// restart). Resending a copy keeps paho's at-least-once behaviour.
type copyingStore struct{ *paho.MemoryStore }

func newCopyingStore() *copyingStore { return &copyingStore{paho.NewMemoryStore()} }

func (s *copyingStore) Get(key string) packets.ControlPacket {
	p := s.MemoryStore.Get(key)
	if pub, ok := p.(*packets.PublishPacket); ok {
		cp := *pub
		return &cp
	}
	return p
}
