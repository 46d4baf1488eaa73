package mqtt

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// asyncResult records what PublishAsync's done was given, and how often.
type asyncResult struct{ ch chan error }

func newAsyncResult() *asyncResult    { return &asyncResult{ch: make(chan error, 4)} }
func (r *asyncResult) done(err error) { r.ch <- err }

// wait returns the one result done was given; a second one fails the test.
func (r *asyncResult) wait(t *testing.T) error {
	t.Helper()
	var err error
	select {
	case err = <-r.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("done was not called")
	}
	select {
	case again := <-r.ch:
		t.Fatalf("done called twice: %v, then %v", err, again)
	case <-time.After(20 * time.Millisecond):
	}
	return err
}

func (r *asyncResult) none(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.ch:
		t.Fatalf("done called with %v, too early", err)
	default:
	}
}

func readPublish(t *testing.T, broker io.Reader) packet {
	t.Helper()
	p, err := readOne(broker)
	if err != nil {
		t.Fatal(err)
	}
	if p.kind != publishType {
		t.Fatalf("the broker read %s", describe(p))
	}
	return p
}

// TestPublishAsyncEndsOnItsOwnPuback: an asynchronous QoS 1 publish returns
// once written; done gets nil on its own PUBACK (not another's), once. A
// QoS 0 one is done at once.
func TestPublishAsyncEndsOnItsOwnPuback(t *testing.T) {
	url, conns := scriptedBroker(t)
	c := dialWith(t, Options{Broker: url, PublishTimeout: time.Minute})
	broker := <-conns
	r := newAsyncResult()
	if _, err := c.PublishAsync(ctxT(t), "bl1/set", []byte(`{"state":"ON"}`), 1, false, AckFunc(r.done)); err != nil {
		t.Fatal(err)
	}
	pub := readPublish(t, broker)
	if pub.pubQoS() != 1 || pub.topic != "bl1/set" || pub.id == 0 {
		t.Fatalf("the broker read %s", describe(pub))
	}
	writePuback(t, broker, pub.id+1)
	time.Sleep(20 * time.Millisecond) // a wrong completion would come now; nothing to poll for
	r.none(t)
	writePuback(t, broker, pub.id)
	if err := r.wait(t); err != nil {
		t.Fatalf("done = %v", err)
	}

	q0 := newAsyncResult()
	if _, err := c.PublishAsync(ctxT(t), "bl1/set", []byte("x"), 0, false, AckFunc(q0.done)); err != nil {
		t.Fatal(err)
	}
	if err := q0.wait(t); err != nil {
		t.Fatalf("QoS 0 done = %v", err)
	}
	if _, err := c.PublishAsync(ctxT(t), "bl1/set", nil, 2, false, AckFunc(q0.done)); err == nil {
		t.Fatal("an asynchronous QoS 2 publish was accepted")
	}
}

// TestPublishAsyncBounded: without a PUBACK, done gets the publish timeout's
// error (and Health notes the broker), or the caller's earlier deadline's;
// abort ends the wait at once and a PUBACK after it changes nothing; a lost
// connection ends every wait with ErrNotConnected.
func TestPublishAsyncBounded(t *testing.T) {
	const timeout = 300 * time.Millisecond
	url, conns := scriptedBroker(t)
	c := dialWith(t, Options{Broker: url, PublishTimeout: timeout})
	broker := <-conns
	far := context.Background() // no deadline
	early, cancelEarly := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelEarly()

	slow, earlyR, aborted, lost := newAsyncResult(), newAsyncResult(), newAsyncResult(), newAsyncResult()
	if _, err := c.PublishAsync(far, "a/slow", nil, 1, false, AckFunc(slow.done)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishAsync(early, "a/early", nil, 1, false, AckFunc(earlyR.done)); err != nil {
		t.Fatal(err)
	}
	abort, err := c.PublishAsync(far, "a/aborted", nil, 1, false, AckFunc(aborted.done))
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint16
	for range 3 {
		ids = append(ids, readPublish(t, broker).id)
	}
	abort(context.Canceled)
	if err := aborted.wait(t); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "a/aborted") {
		t.Errorf("aborted: done = %v", err)
	}

	start := time.Now()
	if err := earlyR.wait(t); !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "within") {
		t.Errorf("past the caller's deadline: done = %v, want the deadline's error", err)
	}
	if err := slow.wait(t); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no acknowledgement from the broker within "+timeout.String()) {
		t.Errorf("unacknowledged: done = %v", err)
	}
	if took := time.Since(start); took > timeout+3*time.Second {
		t.Errorf("the timeout took %s", took)
	}
	if ok, reason := c.Health(); ok || !strings.Contains(reason, "broker") {
		t.Errorf("Health after an unanswered publish = %v %q", ok, reason)
	}
	writePuback(t, broker, ids[2]) // after the abort: ignored
	abort(context.Canceled)        // a second abort gives nothing either
	writePuback(t, broker, ids[0]) // late: ignored
	waitFor(t, 5*time.Second, "Health to recover once the broker answers", func() bool { ok, _ := c.Health(); return ok })
	aborted.none(t)
	slow.none(t)

	if _, err := c.PublishAsync(far, "a/lost", nil, 1, false, AckFunc(lost.done)); err != nil {
		t.Fatal(err)
	}
	readPublish(t, broker)
	broker.Close()
	if err := lost.wait(t); !errors.Is(err, ErrNotConnected) {
		t.Errorf("across a lost connection: done = %v, want ErrNotConnected", err)
	}
	waitFor(t, 5*time.Second, "the connection to be seen lost", func() bool { return !c.Connected() })
	if _, err := c.PublishAsync(far, "a/down", nil, 1, false, AckFunc(lost.done)); !errors.Is(err, ErrNotConnected) {
		t.Errorf("PublishAsync while disconnected = %v", err)
	}
}

// TestPublishAsyncResultDuringTheWrite: a result that comes while the
// PUBLISH is being written (a quick PUBACK, or the connection failed by
// the write itself) is handed to done once the write returned, unless the
// write failed: then PublishAsync returns the error and done never hears.
func TestPublishAsyncResultDuringTheWrite(t *testing.T) {
	broken := errors.New("broken pipe")
	for _, tc := range []struct {
		name     string
		during   bool  // the result comes during the write
		result   error // what the waiter is given
		writeErr error
		want     []error // what done hears
	}{
		{"a quick PUBACK", true, nil, nil, []error{nil}},
		{"the write failed the connection", true, ErrNotConnected, broken, nil},
		{"a PUBACK after the write", false, nil, nil, []error{nil}},
	} {
		var heard []error
		a := &asyncPublish{topic: "t", done: AckFunc(func(err error) { heard = append(heard, err) })}
		if tc.during {
			a.result(tc.result)
		}
		if err := a.written(tc.writeErr); err != tc.writeErr {
			t.Errorf("%s: written = %v", tc.name, err)
		}
		if !tc.during {
			a.result(tc.result)
		}
		if len(heard) != len(tc.want) || (len(heard) == 1 && heard[0] != tc.want[0]) {
			t.Errorf("%s: done heard %v, want %v", tc.name, heard, tc.want)
		}
	}
}
