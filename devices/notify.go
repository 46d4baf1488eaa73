package devices

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// notifyHTTP posts to webhook and ntfy channels (shared: an http.Client
// keeps its connections for reuse; each attempt has its own timeout).
var notifyHTTP = &http.Client{}

// notifyPolicy bounds one HTTP notification: attempts, each within
// timeout, with delays between them (the last delay repeats).
type notifyPolicy struct {
	attempts int
	timeout  time.Duration
	delays   []time.Duration
}

// defaultNotifyPolicy gives a phone three tries within about 20 s: a
// push service that hiccups still delivers, and a dead one fails the step
// soon enough to be seen.
var defaultNotifyPolicy = notifyPolicy{attempts: 3, timeout: 5 * time.Second, delays: []time.Duration{time.Second, 3 * time.Second}}

// ntfyPriorities are the priorities an ntfy message may carry.
var ntfyPriorities = []any{"min", "low", "default", "high", "urgent"}

func notifySpecs(chs []NotifyChannel, counts *notifyCounters) []*model.Spec {
	if len(chs) == 0 {
		return nil
	}
	s := &model.Spec{Source: "config", NoDevice: true}
	for _, ch := range chs {
		if ch.ID == "" {
			continue
		}
		s.Actions = append(s.Actions, notifyAction(ch, counts))
	}
	return []*model.Spec{s}
}

func notifyAction(ch NotifyChannel, counts *notifyCounters) *action {
	name := ch.Name
	if name == "" {
		name = ch.ID
	}
	a := model.NewAction(ch.ID, name, "Send a notification to "+name+"; it leaves the house.", pilotage.RiskExternal)
	a.Fields["message"] = model.StrField("Message text")
	a.Fields["title"] = model.StrField("Optional title")
	a.Required = []string{"message"}
	if ch.Ntfy != "" {
		a.Fields["priority"] = model.EnumField("Optional priority of the push (default: the channel's)", ntfyPriorities)
	}
	a.OffBus = ch.Topic == ""
	if ch.Topic != "" {
		a.WritesTo(ch.Topic)
	}
	a.Send = own(func(ctx context.Context, p *sender, args map[string]any) error {
		title, _ := args["title"].(string)
		message, _ := args["message"].(string)
		switch {
		case ch.Topic != "":
			return p.AddJSON(ch.Topic, notifyBody(message, title))
		case ch.Ntfy != "" && p.dry:
			p.msgs = append(p.msgs, outMsg{url: ch.Ntfy, payload: []byte(message)})
			return nil
		case ch.Ntfy != "":
			prio, _ := args["priority"].(string)
			return counts.deliver(ctx, notifyHTTP, defaultNotifyPolicy, ch.ID, "ntfy", func(ctx context.Context) (*http.Request, error) {
				return ntfyRequest(ctx, ch, title, message, prio)
			})
		case ch.URL != "" && p.dry:
			return p.recordPost(ch.URL, notifyBody(message, title))
		case ch.URL != "":
			body, err := json.Marshal(notifyBody(message, title))
			if err != nil {
				return err
			}
			return counts.deliver(ctx, notifyHTTP, defaultNotifyPolicy, ch.ID, "the webhook", func(ctx context.Context) (*http.Request, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.URL, bytes.NewReader(body))
				if err == nil {
					req.Header.Set("Content-Type", "application/json")
				}
				return req, err
			})
		}
		return fmt.Errorf("devices: %s: channel has neither topic, url nor ntfy", ch.ID)
	})
	return a
}

// ntfyRequest is ntfy's publish as a plain POST: the message is the body,
// the title, priority and tags are headers (non-ASCII titles encoded as
// RFC 2047, which ntfy decodes).
func ntfyRequest(ctx context.Context, ch NotifyChannel, title, message, prio string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.Ntfy, strings.NewReader(message))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if title = strings.Join(strings.Fields(title), " "); title != "" {
		req.Header.Set("Title", mime.QEncoding.Encode("utf-8", title))
	}
	if prio == "" {
		prio = ch.Priority
	}
	if prio != "" {
		req.Header.Set("Priority", prio)
	}
	if len(ch.Tags) > 0 {
		req.Header.Set("Tags", strings.Join(ch.Tags, ","))
	}
	return req, nil
}

// errPermanent marks an answer that another attempt would not change.
var errPermanent = errors.New("not retried")

// deliver sends what newReq makes until it is taken (2xx), a permanent
// refusal (another 4xx than 408 and 429) or the attempts are spent, and
// counts the outcome for the channel.
func (n *notifyCounters) deliver(ctx context.Context, hc *http.Client, p notifyPolicy, id, to string, newReq func(context.Context) (*http.Request, error)) error {
	start := time.Now()
	var err error
	tries := 0
	for tries < p.attempts {
		if tries > 0 {
			if werr := sleepCtx(ctx, p.delays[min(tries-1, len(p.delays)-1)]); werr != nil {
				break
			}
		}
		tries++
		if err = post(ctx, hc, p.timeout, newReq); err == nil || errors.Is(err, errPermanent) {
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("devices: %s: %s: %w (%s in %s)", id, to, err, plural(tries, "attempt"), time.Since(start).Round(time.Millisecond))
	}
	n.record(id, tries, err)
	return err
}

func post(ctx context.Context, hc *http.Client, timeout time.Duration, newReq func(context.Context) (*http.Request, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := newReq(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("no answer within %s", timeout)
		}
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch c := resp.StatusCode; {
	case c < 300:
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return fmt.Errorf("answered %s", resp.Status)
	default:
		return fmt.Errorf("answered %s (%w)", resp.Status, errPermanent)
	}
}

// notifyBody is a notification's JSON: its message, and its title when
// it has one (receivers show an empty one as a blank heading).
func notifyBody(message, title string) map[string]any {
	if title == "" {
		return map[string]any{"message": message}
	}
	return map[string]any{"message": message, "title": title}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// NotifyStats is what a webhook or ntfy channel did since the start:
// messages taken, messages given up on, retries, and the last failure.
type NotifyStats struct {
	Sent        uint64     `json:"sent"`
	Failed      uint64     `json:"failed"`
	Retried     uint64     `json:"retried"`
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

// notifyCounters holds NotifyStats by channel id, under its own lock
// (never the catalog's).
type notifyCounters struct {
	mu   sync.Mutex
	byID map[string]*NotifyStats
	log  *slog.Logger // a message given up on is logged (nil: not)
}

func (n *notifyCounters) record(id string, tries int, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byID == nil {
		n.byID = map[string]*NotifyStats{}
	}
	st := n.byID[id]
	if st == nil {
		st = &NotifyStats{}
		n.byID[id] = st
	}
	if tries > 1 {
		st.Retried += uint64(tries - 1)
	}
	if err == nil {
		st.Sent++
		return
	}
	now := time.Now().UTC()
	st.Failed++
	if n.log != nil {
		n.log.Warn("a notification was given up on", "channel", id, "err", err, "failed_total", st.Failed)
	}
	st.LastError, st.LastErrorAt = err.Error(), &now
}

// NotifyStats returns what the webhook and ntfy channels did since the
// start, by channel id (channels that sent nothing yet are absent).
func (c *Catalog) NotifyStats() map[string]NotifyStats {
	c.notices.mu.Lock()
	defer c.notices.mu.Unlock()
	out := make(map[string]NotifyStats, len(c.notices.byID))
	for id, st := range c.notices.byID {
		out[id] = *st
	}
	return out
}
