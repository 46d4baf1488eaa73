package mqtt

import (
	"fmt"
	"sync"
	"testing"
)

// TestRetainedPublishWhileSubscribing exercises the race retainGuard works
// around; run with -race.
func TestRetainedPublishWhileSubscribing(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	pub := dial(t, b.URL())
	subs := []*Client{dial(t, b.URL()), dial(t, b.URL()), dial(t, b.URL())}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			_ = pub.Publish(ctxT(t), fmt.Sprintf("race/%d/state", i%40), []byte("v"), 1, true)
		}
	}()
	for _, c := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				_ = c.Subscribe(fmt.Sprintf("race/+/%s", []string{"state", "#"}[i%2]), 1, func(Message) {})
			}
		}()
	}
	wg.Wait()
}
