package model

import (
	"errors"
	"time"
)

// Template work is bounded per second as well as per message: a topic
// whose every message used its whole budget (MsgJBudget) kept the reader,
// and so every other device's messages and the rules they fire, busy for
// as long as its burst lasted. Each message may do the least of MsgJBudget,
// what its topic's bucket holds (one hostile topic cannot starve the
// others) and what the bucket of all topics holds (many cannot take the
// CPU); what it did is taken from both, and the buckets refill with time.
// A house of 1,000 entities each rendering a 200-operation template every
// second does a tenth of the global rate, and a topic a few of its own.
const (
	WorkRate      = 2_000_000 // operations per second, all topics together
	workCap       = 4 * MsgJBudget
	TopicWorkRate = 250_000 // operations per second, one topic
	// topicWorkCap lets a topic's message use the whole MsgJBudget twice
	// in a row (a retained state and its first update, say).
	topicWorkCap = 2 * MsgJBudget
	// maxWorkTopics bounds the topic buckets (topics are chosen by whoever
	// publishes); topics beyond it share one bucket until idle ones go.
	maxWorkTopics = 1024
)

// errRate: a bucket of workBudget is empty; the rendering is skipped.
var errRate = errors.New("template work over its rate: this topic's templates, or all topics' together, " +
	"used up the work they may do per second")

// bucket is a token bucket of template operations.
type bucket struct {
	tokens float64
	at     time.Time
}

// level refills b up to now and returns what it holds.
func (b *bucket) level(now time.Time, rate, capacity float64) float64 {
	if b.at.IsZero() {
		b.tokens, b.at = capacity, now
	} else if d := now.Sub(b.at).Seconds(); d > 0 {
		b.tokens, b.at = min(capacity, b.tokens+d*rate), now
	} else if d < 0 {
		b.at = now // a clock set back must not stop the refill until it catches up
	}
	return b.tokens
}

// WorkBudget holds the buckets; it belongs to the holder of c.ingest. A
// topic without a bucket has a full one (buckets are made when a topic
// spends and dropped when they are full again).
type WorkBudget struct {
	global   bucket
	topics   map[string]*bucket
	overflow bucket    // the topics beyond maxWorkTopics
	swept    time.Time // the last sweep of the full buckets
}

func NewWorkBudget() *WorkBudget { return &WorkBudget{topics: map[string]*bucket{}} }

// topic returns topic's bucket, or nil when it has none and may get one.
func (w *WorkBudget) topic(t string) *bucket {
	if b := w.topics[t]; b != nil || len(w.topics) < maxWorkTopics {
		return b
	}
	return &w.overflow
}

// Grant returns the work a message on topic t may do at now.
func (w *WorkBudget) Grant(t string, now time.Time) int {
	g := min(float64(MsgJBudget), w.global.level(now, WorkRate, workCap))
	if b := w.topic(t); b != nil {
		g = min(g, b.level(now, TopicWorkRate, topicWorkCap))
	}
	return max(int(g), 0)
}

// Spend takes the work a message on topic t did from both buckets.
func (w *WorkBudget) Spend(t string, spent int, now time.Time) {
	if spent <= 0 {
		return
	}
	w.global.level(now, WorkRate, workCap)
	w.global.tokens -= float64(spent)
	if len(w.topics) >= maxWorkTopics && now.Sub(w.swept) >= time.Second {
		w.sweep(now)
	}
	b := w.topic(t)
	if b == nil {
		b = &bucket{}
		w.topics[t] = b
	}
	b.level(now, TopicWorkRate, topicWorkCap)
	b.tokens -= float64(spent)
}

// sweep drops the topic buckets that are full again (as good as none).
func (w *WorkBudget) sweep(now time.Time) {
	w.swept = now
	for t, b := range w.topics {
		if b.level(now, TopicWorkRate, topicWorkCap) >= topicWorkCap {
			delete(w.topics, t)
		}
	}
}
