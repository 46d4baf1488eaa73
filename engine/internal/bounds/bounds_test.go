package bounds

import (
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestWorkersRunEverythingConcurrently: every function runs, concurrently
// when submitted concurrently (a blocked firing never holds up another),
// and no goroutine is left once they ended.
func TestWorkersRunEverythingConcurrently(t *testing.T) {
	w := New()
	release := make(chan struct{})
	var started, wg sync.WaitGroup
	const n = 100
	for range n {
		started.Add(1)
		wg.Add(1)
		w.Run(taskFunc(func() { defer wg.Done(); started.Done(); <-release }))
	}
	started.Wait() // all n blocked at once
	close(release)
	wg.Wait()
	testutil.Eventually(t, 10*time.Second, "every goroutine to end", func() bool { return w.Active() == 0 })
}

// limitedTask is a limited Task for tests that ends when its function
// returns.
type limitedTask struct {
	w *Pool
	f func()
}

func (t limitedTask) Do()           { t.f(); t.w.Release() }
func (t limitedTask) Limited() bool { return true }

// TestWorkersLimitRunningFirings: at most MaxRunning limited tasks run at
// once, the others start in order as slots free up, and unlimited tasks
// (bodies with delays and waits) run whatever the limit.
func TestWorkersLimitRunningFirings(t *testing.T) {
	w := New()
	release := make(chan struct{})
	var mu sync.Mutex
	running, peak := 0, 0
	var order []int
	var wg sync.WaitGroup
	const n = MaxRunning + 50
	for i := range n {
		wg.Add(1)
		w.Run(limitedTask{w, func() {
			defer wg.Done()
			mu.Lock()
			running++
			peak = max(peak, running)
			order = append(order, i)
			mu.Unlock()
			<-release
			mu.Lock()
			running--
			mu.Unlock()
		}})
	}
	unlimited := make(chan struct{})
	w.Run(taskFunc(func() { close(unlimited) }))
	select {
	case <-unlimited:
	case <-time.After(5 * time.Second):
		t.Fatal("an unlimited Task waited behind the limited ones")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		r := running
		mu.Unlock()
		if r == MaxRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d limited tasks running, want %d", r, MaxRunning)
		}
		time.Sleep(time.Millisecond)
	}
	// Free one slot at a time and wait for the Task that takes it: tasks
	// start on goroutines of their own, so slots freed together could
	// record their starts in any order even though they were handed out
	// in order.
	for k := range n - MaxRunning {
		release <- struct{}{}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Microsecond) {
			mu.Lock()
			started := len(order)
			mu.Unlock()
			if started == MaxRunning+k+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no backlog Task started after slot %d was freed", k)
			}
		}
	}
	close(release)
	wg.Wait()
	if peak != MaxRunning {
		t.Fatalf("peak %d running, want %d", peak, MaxRunning)
	}
	for i, v := range order[MaxRunning:] {
		if v != MaxRunning+i {
			t.Fatalf("backlog ran out of order: %v", order[MaxRunning:])
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		r, b := w.running, len(w.backlog)
		w.mu.Unlock()
		if r == 0 && b == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after: %d running, %d waiting", r, b)
		}
	}
}

// TestWorkersLoad: the slots' report counts running and waiting firings
// and how long the oldest has waited (what /healthz calls saturated).
func TestWorkersLoad(t *testing.T) {
	w := New()
	release := make(chan struct{})
	var started sync.WaitGroup
	for range MaxRunning + 3 {
		started.Add(1)
		w.Run(limitedTask{w, func() { started.Done(); <-release }})
	}
	defer func() {
		close(release)
		started.Wait()
	}()
	testutil.Eventually(t, 5*time.Second, "every slot taken", func() bool { return w.Load().Running == MaxRunning })
	first := w.Load()
	if first.Waiting != 3 || first.Slots != MaxRunning {
		t.Fatalf("load %+v, want 3 waiting for %d slots", first, MaxRunning)
	}
	testutil.Eventually(t, 5*time.Second, "the oldest wait to grow", func() bool { return w.Load().OldestWaitMS > first.OldestWaitMS })
	if idle := New().Load(); idle.Waiting != 0 || idle.OldestWaitMS != 0 {
		t.Fatalf("idle load %+v", idle)
	}
}

// taskFunc runs a function as an unlimited task.
type taskFunc func()

func (f taskFunc) Do()           { f() }
func (f taskFunc) Limited() bool { return false }

// pendingTask is a limited Task that goes on without its goroutine: it
// ends when end is closed, after Do returned.
type pendingTask struct {
	w   *Pool
	end chan struct{}
}

func (t pendingTask) Do()           { go func() { <-t.end; t.w.Release() }() }
func (t pendingTask) Limited() bool { return true }

// TestSlotHeldUntilRelease: a limited Task that goes on after Do returned
// (a firing waiting for its acknowledgement) keeps its slot until it
// releases it, and the waiting Task then starts, run here or not.
func TestSlotHeldUntilRelease(t *testing.T) {
	w := New()
	ends := make([]chan struct{}, MaxRunning)
	for i := range ends {
		ends[i] = make(chan struct{})
		w.RunHere(pendingTask{w, ends[i]})
	}
	ran := make(chan struct{})
	w.RunHere(limitedTask{w, func() { close(ran) }})
	if l := w.Load(); l.Running != MaxRunning || l.Waiting != 1 {
		t.Fatalf("load %+v, want every slot held and one waiting", l)
	}
	close(ends[0])
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Task did not start when a slot was released")
	}
	for _, e := range ends[1:] {
		close(e)
	}
	testutil.Eventually(t, 5*time.Second, "every slot free", func() bool { return w.Load().Running == 0 })
}

// TestDepthOf: a change within Window of a command to its device, or on
// the command's topic (or the state topic a Zigbee2MQTT set comes back
// on), is one hop deeper than the commanding firing; anything else is 0.
func TestDepthOf(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var c Chains
	c.Wrote("plug.set", "zigbee2mqtt/plug/set", 3, at)
	c.Wrote("lamp.set", "zigbee2mqtt/lamp/set/brightness", 5, at)
	c.Wrote("hook.call", "", 7, at)
	for _, tc := range []struct {
		name, id, topic string
		after           time.Duration
		want            int
	}{
		{"same device", "plug.state", "", time.Second, 4},
		{"state topic of a set", "ha_power.state", "zigbee2mqtt/plug", time.Second, 4},
		{"state topic of an attribute set", "ha_lamp.brightness", "zigbee2mqtt/lamp", 0, 6},
		{"command topic itself", "other.state", "zigbee2mqtt/lamp/set/brightness", 0, 6},
		{"no topic, device only", "hook.fired", "", Window, 8},
		{"after the window", "plug.state", "zigbee2mqtt/plug", Window + time.Millisecond, 0},
		{"another device", "sensor.state", "zigbee2mqtt/sensor", 0, 0},
		{"empty topic matches no topic mark", "sensor.state", "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.DepthOf(tc.id, tc.topic, at.Add(tc.after)); got != tc.want {
				t.Fatalf("DepthOf(%q, %q) = %d, want %d", tc.id, tc.topic, got, tc.want)
			}
		})
	}
	var empty Chains
	if got := empty.DepthOf("plug.state", "zigbee2mqtt/plug", at); got != 0 {
		t.Fatalf("nothing written: depth %d", got)
	}
}

// TestShare: a share grants what it holds, up to the run's whole bound,
// takes back what a run did not use, and refills over ShareRefill.
func TestShare(t *testing.T) {
	var s Share
	t0 := time.Now()
	steps := []struct {
		name      string
		at        time.Duration
		give, max int
		want      int
	}{
		{"a full share", 0, 0, 1000, 1000},
		{"an empty share", 0, 0, 1000, 0},
		{"after 600 given back", 0, 600, 1000, 600},
		{"half the refill later", ShareRefill / 2, 0, 1000, 500},
		{"never more than the whole share", ShareRefill, 5000, 1000, 1000},
	}
	for _, st := range steps {
		s.give(st.give)
		if g := s.take(t0.Add(st.at), st.max); g != st.want {
			t.Fatalf("%s: grants %d, want %d", st.name, g, st.want)
		}
	}
}

// TestTakeOps: a run gets the least of its rule's and its principal's
// shares, and both get back what it did not use.
func TestTakeOps(t *testing.T) {
	t0 := time.Now()
	var ss Shares
	mine := ss.Of("guest")
	if ss.Of("guest") != mine || ss.Of("owner") == mine {
		t.Fatal("one share per principal")
	}
	rules := make([]Share, PrincipalShares+2)
	for i := range rules {
		g := TakeOps(&rules[i], mine, t0, 100)
		want := 100
		if i >= PrincipalShares {
			want = 0 // the principal's four shares are spent
		}
		if g.Ops != want {
			t.Fatalf("rule %d: granted %d, want %d", i, g.Ops, want)
		}
	}
	g := TakeOps(&rules[0], ss.Of("owner"), t0, 100)
	if g.Ops != 0 {
		t.Fatalf("a spent rule's share granted %d under another principal", g.Ops)
	}
	TakeOps(&rules[1], mine, t0, 100).Return(0) // nothing granted, nothing back
	g = Grant{&rules[1], mine, 100}
	g.Return(40)
	if got := TakeOps(&rules[1], mine, t0, 100).Ops; got != 60 {
		t.Fatalf("after a run used 40 of 100: %d granted again, want 60", got)
	}
}

// TestLive: a principal runs at most Max firings at once, an admin at
// most AdminMax, each principal its own, and a released one may be taken
// again; each refusal is counted.
func TestLive(t *testing.T) {
	l := Live{Max: 2, AdminMax: 3}
	for _, c := range []struct {
		principal string
		admin     bool
		want      []bool
	}{
		{"guest", false, []bool{true, true, false}},
		{"assistant", false, []bool{true}},
		{"owner", true, []bool{true, true, true, false, false}},
	} {
		for i, want := range c.want {
			if _, _, ok := l.Acquire(c.principal, c.admin); ok != want {
				t.Fatalf("firing %d of %s: ok %v, want %v", i, c.principal, ok, want)
			}
		}
	}
	l.Release("guest")
	if n, _, ok := l.Acquire("guest", false); !ok || n != 2 {
		t.Fatalf("after a release: %d running, ok %v", n, ok)
	}
	l.Release("owner")
	if n, _, ok := l.Acquire("owner", true); !ok || n != 3 {
		t.Fatalf("after the owner's release: %d running, ok %v", n, ok)
	}
	if n, c, ok := l.Acquire("owner", true); ok || n != 3 || c != 4 {
		t.Fatalf("the owner past AdminMax: %d running, refusal %d, ok %v", n, c, ok)
	}
	if l.Refused() != 4 || l.Running("guest") != 2 || l.Running("owner") != 3 {
		t.Fatalf("refused %d, running %d and %d", l.Refused(), l.Running("guest"), l.Running("owner"))
	}
}
