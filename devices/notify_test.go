package devices

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// pushed is one request an ntfy-like receiver took.
type pushed struct {
	body, title, priority, tags string
}

// receiver is a local HTTP receiver answering with the codes of answers in
// turn (200 once they are spent), and recording what it was sent.
type receiver struct {
	mu      sync.Mutex
	answers []int
	got     []pushed
	srv     *httptest.Server
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{answers: answers}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		title, _ := new(mime.WordDecoder).DecodeHeader(req.Header.Get("Title"))
		r.mu.Lock()
		r.got = append(r.got, pushed{string(b), title, req.Header.Get("Priority"), req.Header.Get("Tags")})
		code := http.StatusOK
		if len(r.answers) > 0 {
			code, r.answers = r.answers[0], r.answers[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) pushes() []pushed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pushed(nil), r.got...)
}

// notifyCatalog is a catalog on an embedded broker with the channels given.
func notifyCatalog(t *testing.T, chs ...NotifyChannel) *Catalog {
	t.Helper()
	b, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	c := NewCatalog(Options{Logger: quietLogger(), Notify: chs})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx, b.Inline(quietLogger())); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNtfyPreset: a channel with ntfy pushes the message as ntfy takes it
// (body, Title, Priority, Tags headers), retries what a busy service
// answers, gives up at once on a refusal, and counts all of it.
func TestNtfyPreset(t *testing.T) {
	ok := newReceiver(t)
	busy := newReceiver(t, 503, 429)
	refusing := newReceiver(t, 400, 400, 400)
	c := notifyCatalog(t,
		NotifyChannel{ID: "notify.phone", Name: "Phone", Ntfy: ok.srv.URL + "/house-1234", Priority: "high", Tags: []string{"house", "warning"}},
		NotifyChannel{ID: "notify.busy", Ntfy: busy.srv.URL + "/x"},
		NotifyChannel{ID: "notify.refused", Ntfy: refusing.srv.URL + "/x"},
	)
	ctx := context.Background()
	if err := c.Call(ctx, "notify.phone", map[string]any{"message": "Motion in the hall", "title": "Hallway ☃\nnow"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "notify.phone", map[string]any{"message": "Door open", "priority": "urgent"}); err != nil {
		t.Fatal(err)
	}
	want := []pushed{{"Motion in the hall", "Hallway ☃ now", "high", "house,warning"}, {"Door open", "", "urgent", "house,warning"}}
	if got := ok.pushes(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("pushed %+v, want %+v", got, want)
	}
	if err := c.Call(ctx, "notify.phone", map[string]any{"message": "x", "priority": "loud"}); err == nil || !strings.Contains(err.Error(), "priority") {
		t.Errorf("priority loud: %v", err)
	}
	t0 := time.Now()
	if err := c.Call(ctx, "notify.busy", map[string]any{"message": "m"}); err != nil || len(busy.pushes()) != 3 {
		t.Errorf("busy service: %v after %d attempts, want delivery on the third", err, len(busy.pushes()))
	}
	t.Logf("delivered on the third attempt after %s", time.Since(t0).Round(time.Millisecond))
	err := c.Call(ctx, "notify.refused", map[string]any{"message": "m"})
	if err == nil || !strings.Contains(err.Error(), "notify.refused: ntfy: answered 400 Bad Request (not retried) (1 attempt in") || len(refusing.pushes()) != 1 {
		t.Errorf("refused: %v after %d attempts", err, len(refusing.pushes()))
	}
	st := c.NotifyStats()
	if p := st["notify.phone"]; p.Sent != 2 || p.Failed != 0 || p.Retried != 0 {
		t.Errorf("phone stats %+v", p)
	}
	if b := st["notify.busy"]; b.Sent != 1 || b.Retried != 2 {
		t.Errorf("busy stats %+v", b)
	}
	if r := st["notify.refused"]; r.Failed != 1 || !strings.Contains(r.LastError, "400") || r.LastErrorAt == nil {
		t.Errorf("refused stats %+v", r)
	}
}

// TestNotifyTimeoutsAndGivingUp: each attempt is bounded by the policy's
// timeout, and the error says how many attempts over how long.
func TestNotifyTimeoutsAndGivingUp(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	var n notifyCounters
	p := notifyPolicy{attempts: 2, timeout: 100 * time.Millisecond, delays: []time.Duration{10 * time.Millisecond}}
	err := n.deliver(context.Background(), notifyHTTP, p, "notify.slow", "the webhook", func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, hang.URL, nil)
	})
	if err == nil || !strings.Contains(err.Error(), "notify.slow: the webhook: no answer within 100ms (2 attempts in") {
		t.Fatalf("hanging webhook: %v", err)
	}
	if st := n.byID["notify.slow"]; st.Failed != 1 || st.Retried != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestNotifyOffBus: CallAsync of an HTTP channel returns before the
// receiver answers (the caller may be the connection's reader) and done
// reports the delivery; abort ends the wait at once.
func TestNotifyOffBus(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	c := notifyCatalog(t, NotifyChannel{ID: "notify.phone", Ntfy: slow.URL + "/t"})
	done := make(chan error, 2)
	if _, err := c.CallAsync(context.Background(), "notify.phone", map[string]any{"message": "m"}, mqtt.AckFunc(func(err error) { done <- err })); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("done before the receiver answered: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("delivery: %v", err)
	}
	// The receiver holds the request until the sender gives up on it: an
	// abort while the POST is in flight must end it. (The server notices a
	// closed connection only once the body is read.)
	arrived, ended := make(chan struct{}), make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		close(arrived)
		<-r.Context().Done()
		close(ended)
	}))
	defer hold.Close()
	c2 := notifyCatalog(t, NotifyChannel{ID: "notify.phone", Ntfy: hold.URL + "/t"})
	sent, err := c2.CallAsync(context.Background(), "notify.phone", map[string]any{"message": "m"}, mqtt.AckFunc(func(err error) { done <- err }))
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	stop := errors.New("firing cancelled")
	sent.Abort(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("after abort: %v", err)
	}
	select {
	case <-ended:
	case <-time.After(3 * time.Second): // the sender's own timeout is 5 s
		t.Fatal("the aborted POST was still open after 3 s")
	}
}
