package mqtt

import (
	"sync"
	"time"
)

// maxBatch bounds the packets handed to a writing goroutine: past it, a
// writer waits for the socket itself.
const maxBatch = 256 << 10

// writer is the one way packets reach the socket. Every packet is written
// whole by the goroutine that made it (a publisher, the reader's PUBACK,
// the keep-alive's PINGREQ): no writing goroutine to hand over to, so a
// command costs no thread wake-up on its way out.
//
// Packets do not queue for the socket one by one: while a goroutine
// writes, the others hand it their packets (batch) and return, and it
// writes them all in one write before it lets go. Firings answering a
// burst of events then cost a write syscall per burst, not per command,
// and the broker a read.
type writer struct {
	wmu sync.Mutex // held by the goroutine writing

	bmu     sync.Mutex
	writing bool   // a goroutine holds wmu: it writes batch too
	batch   []byte // packets handed to that goroutine, whole, in order
	spare   []byte // the array of the batch last written (reused)
}

// writePacket writes one whole packet, or hands it to the goroutine
// writing now, which writes it before it returns: either way it reaches
// the socket after every packet this goroutine wrote before. A write that
// fails leaves the stream cut mid-packet, so it closes the connection
// (the reader then reports the loss and the client reconnects): the QoS 1
// publishes it carried hear errLostUnacked, the QoS 0 ones handed over
// are lost with the connection.
func (k *conn) writePacket(pkt []byte) error {
	w := &k.writer
	w.bmu.Lock()
	if w.writing && len(w.batch)+len(pkt) <= maxBatch {
		w.batch = append(w.batch, pkt...)
		w.bmu.Unlock()
		return nil
	}
	w.bmu.Unlock()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if k.isDead() {
		return ErrNotConnected
	}
	w.bmu.Lock()
	w.writing = true
	w.bmu.Unlock()
	_, err := k.nc.Write(pkt)
	for err == nil {
		w.bmu.Lock()
		b := w.batch
		if len(b) == 0 {
			w.writing = false
			w.bmu.Unlock()
			k.lastWrite.Store(time.Now().UnixNano())
			return nil
		}
		w.batch = w.spare[:0]
		w.bmu.Unlock()
		_, err = k.nc.Write(b)
		w.spare = b // only the goroutine holding wmu touches spare
	}
	w.bmu.Lock()
	w.writing, w.batch = false, nil
	w.bmu.Unlock()
	k.close(err)
	return err
}
