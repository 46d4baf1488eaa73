package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// benchResult is one measured configuration.
type benchResult struct {
	Rules int `json:"rules"`
	Rate  int `json:"rate"`
	loadResult
	Recorded  int           `json:"recorded"`
	SetupTime time.Duration `json:"setup"`
	// Per-event allocation and collections during the measuring phase
	// (whole process: broker, clients, engine, recorder).
	BytesPerEvent  uint64 `json:"bytes_per_event"`
	AllocsPerEvent uint64 `json:"allocs_per_event"`
	GCs            uint32 `json:"gcs"`
	HeapLive       uint64 `json:"heap_live"` // after set-up, bytes
	// CPU is the server process's CPU time (user+system) per second of the
	// measuring phase (1.0 is one core busy); LoadCPU is the load
	// generator's when it runs as its own process.
	CPU float64 `json:"cpu_cores"`
	// GCTime is how long a full collection of the set-up heap takes
	// (the work every collection during the measurement repeats).
	GCTime time.Duration `json:"gc_time"`
}

// runBench measures event → command latency: a state message is published,
// an installed rule fires and publishes a command, a subscriber receives it.
// Everything is real: embedded broker on loopback, SQLite, the recorder
// writing a trace for every firing.
func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pilothouse bench", flag.ContinueOnError)
	rulesList := fs.String("rules", "1,1000,10000", "comma-separated installed-rule counts to measure")
	rate := fs.Int("rate", 1000, "events per second")
	dur := fs.Duration("duration", 5*time.Second, "measuring time per configuration")
	jsonOut := fs.Bool("json", false, "print results as JSON lines")
	brokerURL := fs.String("broker", "", "use this MQTT broker (e.g. a local Mosquitto) instead of the embedded one")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measuring phases (not the set-up) to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the last configuration to this file and the profile at the start of its measuring phase to this file.base (go tool pprof -base FILE.base FILE)")
	loadProcess := fs.Bool("load-process", false, "run the load generator (publisher and subscriber) as a child process instead of inside the server process")
	traceFile := fs.String("trace", "", "write a runtime execution trace of the measuring phases to this file (go tool trace)")
	heapProfile := fs.String("heapprofile", "", "write the live heap after the set-up of the last configuration to this file, and after its measurement to this file.after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		profileTo = f
	}
	if *memProfile != "" {
		// Set once, before anything is allocated: the sampler computes its
		// next sample from the rate in force at the previous one, so a rate
		// changed later (or 0 during set-up) is not followed.
		runtime.MemProfileRate = 64 << 10
		allocProfileTo = *memProfile
	}
	heapProfileTo = *heapProfile
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		traceTo = f
	}
	if heapProfileTo != "" && *memProfile == "" {
		runtime.MemProfileRate = 4 << 10
	}
	var counts []int
	for _, s := range splitComma(*rulesList) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("--rules: %q is not a positive count", s)
		}
		counts = append(counts, n)
	}
	for _, n := range counts {
		res, err := benchOnce(ctx, *brokerURL, n, *rate, *dur, !*loadProcess)
		if err != nil {
			return err
		}
		if *jsonOut {
			b, _ := json.Marshal(res)
			fmt.Println(string(b))
		} else {
			fmt.Printf("rules=%-6d rate=%d/s sent=%d received=%d lost=%d p50=%v p99=%v max=%v recorded=%d setup=%v heap=%dMB alloc/event=%dB/%d gcs=%d gc=%v cpu=%.2f load-cpu=%.2f\n",
				res.Rules, res.Rate, res.Sent, res.Received, res.Lost, res.P50.Round(time.Microsecond), res.P99.Round(time.Microsecond),
				res.Max.Round(time.Microsecond), res.Recorded, res.SetupTime.Round(time.Millisecond),
				res.HeapLive>>20, res.BytesPerEvent, res.AllocsPerEvent, res.GCs, res.GCTime.Round(time.Millisecond), res.CPU, res.LoadCPU)
		}
	}
	return nil
}

func splitComma(s string) []string {
	var out []string
	cur := ""
	for _, r := range s {
		if r == ',' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		if r != ' ' {
			cur += string(r)
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// benchProps is how many counters one bench sensor exposes: rule i watches
// counter i%benchProps of sensor i/benchProps, so every rule has its own
// trigger entity while the house stays a plausible size (10,000 rules on
// 1,000 sensors and 1,000 lights).
const benchProps = 10

func benchSensors(n int) int { return (n + benchProps - 1) / benchProps }

func benchOnce(ctx context.Context, brokerURL string, n, rate int, dur time.Duration, inProcess bool) (*benchResult, error) {
	t0 := time.Now()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir, err := os.MkdirTemp("", "pilothouse-bench-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var broker *mqtt.Broker
	if brokerURL == "" {
		if broker, err = mqtt.StartBroker("127.0.0.1:0", log); err != nil {
			return nil, err
		}
		defer broker.Close()
		brokerURL = broker.URL()
	}
	// Topics of this run only (an external broker may hold retained
	// messages of earlier runs).
	base := fmt.Sprintf("bench%d", time.Now().UnixNano())
	store, err := storage.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	// As the server does: the embedded broker's own client, or a TCP
	// client of an external broker.
	var client mqttConn
	if broker != nil {
		client = broker.Inline(log)
	} else if client, err = mqtt.Dial(ctx, mqtt.Options{Broker: brokerURL, ClientID: "bench-engine", Logger: log}); err != nil {
		return nil, err
	}
	defer client.Close()
	devs := devices.NewCatalog(devices.Options{Z2MBase: base, HAPrefix: base + "-ha", Logger: log})
	if err := devs.Start(ctx, client); err != nil {
		return nil, err
	}
	eng := engine.New(engine.Config{}, devs, store, log)
	if err := eng.Start(ctx); err != nil {
		return nil, err
	}
	defer eng.Close()

	pub, err := mqtt.Dial(ctx, mqtt.Options{Broker: brokerURL, ClientID: "bench-setup", Logger: log})
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	if err := pub.Publish(ctx, base+"/bridge/devices", devices.SyntheticZ2MHouse(benchSensors(n), benchProps), 1, false); err != nil {
		return nil, err
	}
	if err := waitUntil(ctx, 60*time.Second, func() bool {
		_, ok := devs.Snapshot().Get(fmt.Sprintf("bench_light_%d.set", benchSensors(n)-1))
		return ok
	}); err != nil {
		return nil, fmt.Errorf("bench devices never appeared in the catalog: %w", err)
	}
	for i := 0; i < n; i++ {
		dev, prop := i/benchProps, i%benchProps
		prog := fmt.Sprintf(`{"name":"bench-%d","mode":"parallel","max":1000,"triggers":[{"id":"t","state":"bench_sensor_%d.count%d"}],
"steps":[{"id":"cmd","call":"bench_light_%d.set","args":{"brightness":"{{ trigger.value }}"}}]}`, i, dev, prop, dev)
		resp, err := eng.Execute(ctx, engine.ExecuteRequest{Program: json.RawMessage(prog), TraceLevel: "none", Store: boolPtr(false)})
		if err != nil {
			return nil, fmt.Errorf("installing bench rule %d: %w", i, err)
		}
		if !resp.Outcome.OK {
			return nil, fmt.Errorf("installing bench rule %d: %s %s %v", i, resp.Outcome.Status, resp.Outcome.Error, resp.Diagnostics)
		}
	}
	res := &benchResult{Rules: n, Rate: rate, SetupTime: time.Since(t0)}

	if profileTo != nil {
		if err := pprof.StartCPUProfile(profileTo); err == nil {
			defer pprof.StopCPUProfile()
		}
	}
	gcStart := time.Now()
	runtime.GC()
	res.GCTime = time.Since(gcStart)
	if allocProfileTo != "" {
		writeProfile("allocs", allocProfileTo+".base") // as of the collection above
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	res.HeapLive = ms0.HeapAlloc
	if heapProfileTo != "" {
		writeProfile("heap", heapProfileTo)
	}
	spec := loadSpec{Broker: brokerURL, Base: base, Rules: n, Rate: rate, Duration: dur}
	if traceTo != nil && !trace.IsEnabled() {
		if err := trace.Start(traceTo); err == nil {
			defer trace.Stop()
		}
	}
	start, cpu0 := time.Now(), processCPU()
	var lr *loadResult
	if inProcess {
		lr, err = runLoad(ctx, spec)
		if lr != nil {
			lr.LoadCPU = 0 // counted in the server's
		}
	} else {
		lr, err = runLoadProcess(ctx, spec)
	}
	if err != nil {
		return nil, err
	}
	eng.Flush()
	res.CPU = (processCPU() - cpu0).Seconds() / time.Since(start).Seconds()
	if heapProfileTo != "" || allocProfileTo != "" {
		runtime.GC() // profiles are as of the last collection
	}
	if heapProfileTo != "" {
		writeProfile("heap", heapProfileTo+".after")
	}
	if allocProfileTo != "" {
		writeProfile("allocs", allocProfileTo)
	}
	runtime.ReadMemStats(&ms1)
	res.loadResult = *lr
	if res.Sent > 0 {
		res.BytesPerEvent = (ms1.TotalAlloc - ms0.TotalAlloc) / uint64(res.Sent)
		res.AllocsPerEvent = (ms1.Mallocs - ms0.Mallocs) / uint64(res.Sent)
	}
	res.GCs = ms1.NumGC - ms0.NumGC
	// The command reaches the subscriber before the firing is recorded:
	// wait (bounded) until every firing has been handed to the recorder.
	count := func() int {
		eng.Flush()
		runs, err := eng.ListRuns(ctx, engine.RunFilter{Kind: engine.KindFiring, Limit: 1 << 30})
		if err != nil {
			return -1
		}
		return len(runs)
	}
	want := res.Sent
	if n > 0 && want > 50*n {
		want = 50 * n // history is trimmed to 50 per rule and outcome
	}
	_ = waitUntil(ctx, 10*time.Second, func() bool { return count() >= want })
	res.Recorded = count()
	return res, nil
}

func boolPtr(b bool) *bool { return &b }

// processCPU is the user+system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// allocProfileTo names the file for the allocation profile (bench --memprofile).
var allocProfileTo string

func writeProfile(name, file string) {
	if f, err := os.Create(file); err == nil {
		_ = pprof.Lookup(name).WriteTo(f, 0)
		f.Close()
	}
}

// heapProfileTo names the file for the live heap after set-up (bench --heapprofile).
var heapProfileTo string

// profileTo receives the CPU profile of the measuring phase (bench --cpuprofile).
var profileTo io.Writer

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// slowLog, when set (PILOTHOUSE_BENCH_SLOW=duration), receives a line per
// event slower than slowAfter: to line tail latency up with GODEBUG=gctrace=1.
var (
	traceTo   io.Writer // --trace: the first measured configuration is traced
	slowLog   io.Writer
	slowAfter time.Duration
)

func init() {
	if d, err := time.ParseDuration(os.Getenv("PILOTHOUSE_BENCH_SLOW")); err == nil {
		slowLog, slowAfter = os.Stderr, d
	}
}

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

// runBenchLoad is the hidden "bench-load" command: run the load described
// by the JSON argument and print the result as JSON.
func runBenchLoad(ctx context.Context, args []string) error {
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
	res := &loadResult{}
	var mu sync.Mutex
	sentAt := map[int]time.Time{}
	var lat []time.Duration
	sub, err := dialLoad(spec.Broker, "bench-subscriber", 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer sub.close()
	if err := sub.subscribe(spec.Base+"/+/set", func(_ string, payload []byte) {
		now := time.Now()
		var body struct {
			Brightness float64 `json:"brightness"`
		}
		if json.Unmarshal(payload, &body) != nil {
			return
		}
		seq := int(body.Brightness)
		mu.Lock()
		if t, ok := sentAt[seq]; ok {
			lat = append(lat, now.Sub(t))
			if traceTo != nil && now.Sub(t) > 10*time.Millisecond && trace.IsEnabled() {
				trace.Log(context.Background(), "slow", now.Sub(t).String())
			}
			if slowLog != nil && now.Sub(t) > slowAfter {
				fmt.Fprintf(slowLog, "slow seq=%d sent=%s latency=%v\n", seq, t.Format("15:04:05.000000"), now.Sub(t).Round(time.Microsecond))
			}
			delete(sentAt, seq)
		}
		mu.Unlock()
	}); err != nil {
		return nil, err
	}
	pub, err := dialLoad(spec.Broker, "bench-publisher", 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer pub.close()
	rnd := rand.New(rand.NewSource(1))
	topics := make([]string, benchSensors(spec.Rules))
	for i := range topics {
		topics[i] = fmt.Sprintf("%s/bench_sensor_%d", spec.Base, i)
	}
	var payload []byte
	interval := time.Second / time.Duration(spec.Rate)
	total := int(spec.Duration / interval)
	start, cpu0 := time.Now(), processCPU()
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
		mu.Lock()
		sentAt[seq] = time.Now()
		mu.Unlock()
		if err := pub.publish(topics[rule/benchProps], payload); err != nil {
			return nil, err
		}
		res.Sent++
	}
	_ = waitUntil(ctx, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sentAt) == 0
	})
	res.LoadCPU = (processCPU() - cpu0).Seconds() / time.Since(start).Seconds()
	mu.Lock()
	res.Received = len(lat)
	res.Lost = len(sentAt)
	mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[len(lat)*99/100]
		res.Max = lat[len(lat)-1]
	}
	return res, nil
}
