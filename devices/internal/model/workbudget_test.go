package model

import (
	"fmt"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/bucket"
)

// TestWorkBudgetRates: a topic that spends all it is granted gets its
// topic rate, topics together get the global rate, and an idle topic's
// bucket fills again.
func TestWorkBudgetRates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		topics int
		want   int // the operations granted over 10 s once the buckets are empty
	}{
		{"one topic", 1, 10 * TopicWorkRate},
		{"four topics", 4, 4 * 10 * TopicWorkRate},
		{"many topics", 100, 10 * WorkRate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWorkBudget()
			now := time.Unix(1e9, 0)
			drain := func() (total int) {
				for i := range tc.topics {
					topic := fmt.Sprint("t/", i)
					for g := w.Grant(topic, now); g > 0; g = w.Grant(topic, now) {
						w.Spend(topic, g, false, now)
						total += g
					}
				}
				return total
			}
			for range 60 { // six seconds empty the buckets the first burst left
				drain()
				now = now.Add(100 * time.Millisecond)
			}
			got := 0
			for range 100 {
				now = now.Add(100 * time.Millisecond)
				got += drain()
			}
			if got < tc.want*9/10 || got > tc.want*11/10 {
				t.Errorf("granted %d over 10 s, want ~%d", got, tc.want)
			}
			now = now.Add(time.Minute)
			if g := w.Grant("t/0", now); g != MsgJBudget {
				t.Errorf("after a minute idle, granted %d, want %d", g, MsgJBudget)
			}
		})
	}
}

// TestWorkBudgetTopicsBounded: the buckets are keyed by topics whoever
// publishes chooses; past maxWorkTopics new topics share one bucket, and
// the buckets that are full again are dropped.
func TestWorkBudgetTopicsBounded(t *testing.T) {
	w := NewWorkBudget()
	now := time.Unix(1e9, 0)
	for i := range 2 * maxWorkTopics {
		topic := fmt.Sprint("t/", i)
		w.Spend(topic, 1000, false, now)
		if len(w.topics) > maxWorkTopics {
			t.Fatalf("%d topic buckets after %d topics, want at most %d", len(w.topics), i+1, maxWorkTopics)
		}
	}
	if w.overflow == (bucket.Bucket{}) {
		t.Error("the topics past the bound did not share the overflow bucket")
	}
	now = now.Add(time.Minute)
	w.Spend("late", 1000, false, now)
	if len(w.topics) != 1 || w.topics["late"] == nil {
		t.Errorf("%d topic buckets after a minute idle, want the one just spent", len(w.topics))
	}
}

// TestWorkBudgetClockSetBack: a clock set back an hour does not stop the
// buckets refilling for an hour.
func TestWorkBudgetClockSetBack(t *testing.T) {
	w := NewWorkBudget()
	now := time.Unix(1e9, 0)
	for g := w.Grant("t", now); g > 0; g = w.Grant("t", now) {
		w.Spend("t", g, false, now)
	}
	now = now.Add(-time.Hour)
	w.Grant("t", now)
	now = now.Add(time.Second)
	if g := w.Grant("t", now); g < TopicWorkRate*9/10 {
		t.Errorf("a second after the clock was set back, granted %d, want ~%d", g, TopicWorkRate)
	}
}

// TestQuietTopicKeepsItsReserve: busy topics held back by the empty global
// bucket spend nothing, so their own buckets filled again and they passed
// for topics at rest, taking the reserve that quiet topics keep below the
// global bucket; a neighbour's first message after a few seconds of that
// was throttled (devices TestTemplateWorkBoundedPerSecond failed so on a
// loaded machine). A throttled message now keeps its topic from rest.
func TestQuietTopicKeepsItsReserve(t *testing.T) {
	w := NewWorkBudget()
	now := time.Unix(1e9, 0)
	const burn = MsgJBudget // a hostile rendering takes all it is granted
	for step := range 300 { // 10 hostile topics, a message every 10 ms each, for 3 s
		now = now.Add(10 * time.Millisecond)
		for i := range 10 {
			topic := fmt.Sprint("burn/", i)
			g := w.Grant(topic, now)
			if g < 1000 { // too little for one rendering: throttled
				w.Spend(topic, 0, true, now)
				continue
			}
			w.Spend(topic, min(g, burn), false, now)
		}
		// Past the first second (each hostile topic's first message was
		// at rest, and took the reserve), a quiet topic's first message
		// gets the reserve whenever it comes.
		if g := w.Grant("calm/state", now); step >= 100 && g < workReserve/2 {
			t.Fatalf("at %d ms, a quiet topic's first message is granted %d, want at least %d", 10*step, g, workReserve/2)
		}
	}
}
