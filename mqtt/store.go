package mqtt

import (
	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// copyingStore is paho's memory store, except that it never shares a
// PUBLISH with paho's writer: Put keeps a copy and Get hands out a copy.
// paho writes a packet while sending it (the fixed header's length), and
// its resume (after a reconnect) reads every stored packet and sets DUP on
// it, while a publish made on the new connection may be writing that same
// packet: a data race inside paho, seen by the race detector when a
// firing's command met a broker restart. Resending a copy keeps paho's
// at-least-once behaviour.
type copyingStore struct{ *paho.MemoryStore }

func newCopyingStore() *copyingStore { return &copyingStore{paho.NewMemoryStore()} }

func (s *copyingStore) Put(key string, p packets.ControlPacket) {
	s.MemoryStore.Put(key, copyPublish(p))
}

func (s *copyingStore) Get(key string) packets.ControlPacket {
	return copyPublish(s.MemoryStore.Get(key))
}

// copyPublish copies a PUBLISH (its payload is never modified in place);
// other packets are returned as they are.
func copyPublish(p packets.ControlPacket) packets.ControlPacket {
	if pub, ok := p.(*packets.PublishPacket); ok {
		cp := *pub
		return &cp
	}
	return p
}
