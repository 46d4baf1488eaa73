package mqtt

import (
	"fmt"
	"sync"
	"testing"
)

// TestRetainedWillWhileSubscribing: a retained will is stored the way a
// retained PUBLISH is, so retainGuard must cover it too; run with -race.
func TestRetainedWillWhileSubscribing(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	subs := []*Client{dial(t, b.URL()), dial(t, b.URL())}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 40 {
			w, err := dialWithWill(t, b.URL(), "", "", fmt.Sprintf("race/%d/lwt", i%10), "gone")
			if err != nil {
				t.Error(err)
				return
			}
			w.cut()
		}
	}()
	for _, c := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				_ = c.Subscribe(fmt.Sprintf("race/+/%s", []string{"lwt", "#"}[i%2]), 1, func(Message) {})
			}
		}()
	}
	wg.Wait()
}
