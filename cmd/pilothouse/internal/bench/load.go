package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"runtime/trace"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The bench's load generator: it plays Zigbee2MQTT's sensors and a
// light's listener, in the server's process or in its own (bench-load).

// loadSpec tells the load generator what to publish and where.
type loadSpec struct {
	Broker   string        `json:"broker"`
	Base     string        `json:"base"`
	Rules    int           `json:"rules"`
	Rate     int           `json:"rate"`
	Duration time.Duration `json:"duration"`
}

// loadResult is what the load generator measured.
type loadResult struct {
	Sent     int           `json:"sent"`
	Received int           `json:"received"`
	Lost     int           `json:"lost"`
	P50      time.Duration `json:"p50"`
	P99      time.Duration `json:"p99"`
	Max      time.Duration `json:"max"`
	LoadCPU  float64       `json:"load_cpu_cores"`
}

// runLoadProcess runs the load generator as a child process ("pilothouse
// bench-load"), like Zigbee2MQTT and a device would be: its CPU and garbage
// are not the server's, and a pause of the server does not pause the clock
// that measures it.
func runLoadProcess(ctx context.Context, spec loadSpec) (*loadResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(spec)
	cmd := exec.CommandContext(ctx, exe, "bench-load", string(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("bench load generator: %w", err)
	}
	var lr loadResult
	if err := json.Unmarshal(out, &lr); err != nil {
		return nil, fmt.Errorf("bench load generator printed %q: %w", out, err)
	}
	return &lr, nil
}

// RunLoad is the hidden "bench-load" command: run the load described
// by the JSON argument and print the result as JSON.
func RunLoad(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("bench-load: want one JSON argument (started by pilothouse bench)")
	}
	var spec loadSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fmt.Errorf("bench-load: %w", err)
	}
	lr, err := runLoad(ctx, spec)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(lr)
}

// runLoad publishes spec.Rate state messages a second for spec.Duration, each
// for a random rule, and times each until its command reaches a subscriber.
func runLoad(ctx context.Context, spec loadSpec) (*loadResult, error) {
	l := &latencies{sentAt: map[int]time.Time{}}
	sub, err := dialLoad(spec.Broker, "bench-subscriber", 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer sub.close()
	if err := sub.subscribe(spec.Base+"/+/set", l.received); err != nil {
		return nil, err
	}
	pub, err := dialLoad(spec.Broker, "bench-publisher", 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer pub.close()
	res := &loadResult{}
	start, cpu0 := time.Now(), processCPU()
	if res.Sent, err = publishLoad(pub, spec, l); err != nil {
		return nil, err
	}
	_ = waitUntil(ctx, 10*time.Second, func() bool { return l.pending() == 0 })
	res.LoadCPU = (processCPU() - cpu0).Seconds() / time.Since(start).Seconds()
	l.summarize(res)
	return res, nil
}

// publishLoad publishes the events on schedule, each the state of a
// random rule's counter carrying its sequence number, and returns how
// many it sent.
func publishLoad(pub *loadClient, spec loadSpec, l *latencies) (int, error) {
	rnd := rand.New(rand.NewSource(1))
	topics := make([]string, benchSensors(spec.Rules))
	for i := range topics {
		topics[i] = fmt.Sprintf("%s/bench_sensor_%d", spec.Base, i)
	}
	var payload []byte
	interval := time.Second / time.Duration(spec.Rate)
	total := int(spec.Duration / interval)
	start := time.Now()
	sent := 0
	for seq := 1; seq <= total; seq++ {
		due := start.Add(time.Duration(seq) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		rule := rnd.Intn(spec.Rules) // the rule this event is for
		// The load generator shares the CPUs with the server: keep it cheap.
		payload = strconv.AppendInt(append(payload[:0], `{"count`...), int64(rule%benchProps), 10)
		payload = strconv.AppendInt(append(payload, `":`...), int64(seq), 10)
		payload = append(payload, '}')
		l.sent(seq)
		if err := pub.publish(topics[rule/benchProps], payload); err != nil {
			return sent, err
		}
		sent++
	}
	return sent, nil
}

// latencies pairs each event's sequence number with the command it
// caused (the rule sets the light's brightness to it).
type latencies struct {
	mu     sync.Mutex
	sentAt map[int]time.Time // sent, no command seen yet
	lat    []time.Duration
}

func (l *latencies) sent(seq int) {
	l.mu.Lock()
	l.sentAt[seq] = time.Now()
	l.mu.Unlock()
}

// received is the subscriber's handler for a command.
func (l *latencies) received(_ string, payload []byte) {
	now := time.Now()
	var body struct {
		Brightness float64 `json:"brightness"`
	}
	if json.Unmarshal(payload, &body) != nil {
		return
	}
	seq := int(body.Brightness)
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.sentAt[seq]
	if !ok {
		return
	}
	l.lat = append(l.lat, now.Sub(t))
	if traceTo != nil && now.Sub(t) > 10*time.Millisecond && trace.IsEnabled() {
		trace.Log(context.Background(), "slow", now.Sub(t).String())
	}
	if slowLog != nil && now.Sub(t) > slowAfter {
		fmt.Fprintf(slowLog, "slow seq=%d sent=%s latency=%v\n", seq, t.Format("15:04:05.000000"), now.Sub(t).Round(time.Microsecond))
	}
	delete(l.sentAt, seq)
}

func (l *latencies) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sentAt)
}

// summarize fills in what was received and lost and the percentiles.
func (l *latencies) summarize(res *loadResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res.Received = len(l.lat)
	res.Lost = len(l.sentAt)
	lat := l.lat
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[len(lat)*99/100]
		res.Max = lat[len(lat)-1]
	}
}
