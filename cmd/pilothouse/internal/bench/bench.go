// Package bench is pilothouse bench: it measures event → command latency
// through a real house, with a load generator that plays the devices.
package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"syscall"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/mqtt"
)

// Result is one measured configuration.
type Result struct {
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

// House is the running server a configuration measures.
type House struct {
	Engine  *engine.Engine
	Devices *devices.Catalog
	Broker  string // the URL the load generator and the set-up connect to
	Stop    func()
}

// Start starts the server's own wiring for one configuration: its data in
// dir, its Zigbee2MQTT topics under base, on brokerURL or, when that is
// empty, its embedded broker on a free loopback port.
type Start func(ctx context.Context, dir, brokerURL, base string) (*House, error)

// Run measures event → command latency: a state message is published,
// an installed rule fires and publishes a command, a subscriber receives it.
// Everything is real: the server's own wiring (start) with its embedded
// broker on loopback, SQLite, the recorder writing a trace for every firing.
func Run(ctx context.Context, bf *Flags, start Start) error {
	counts, err := benchCounts(bf.rules)
	if err != nil {
		return err
	}
	closeProfiles, err := bf.profiles()
	if err != nil {
		return err
	}
	defer closeProfiles()
	for _, n := range counts {
		res, err := Once(ctx, start, bf.broker, n, bf.rate, bf.dur, !bf.loadProcess)
		if err != nil {
			return err
		}
		printBench(res, bf.json)
	}
	return nil
}

// Flags is pilothouse bench's command line.
type Flags struct {
	rules, broker                                  string
	rate                                           int
	dur                                            time.Duration
	json, loadProcess                              bool
	cpuProfile, memProfile, traceFile, heapProfile string
}

// Register is bench's flag table (the command table's too).
func (bf *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&bf.rules, "rules", "1,1000,10000", "comma-separated installed-rule counts to measure")
	fs.IntVar(&bf.rate, "rate", 1000, "events per second")
	fs.DurationVar(&bf.dur, "duration", 5*time.Second, "measuring time per configuration")
	fs.BoolVar(&bf.json, "json", false, "print results as JSON lines")
	fs.StringVar(&bf.broker, "broker", "", "use this MQTT broker (e.g. a local Mosquitto) instead of the embedded one")
	fs.StringVar(&bf.cpuProfile, "cpuprofile", "", "write a CPU profile of the measuring phases (not the set-up) to this file")
	fs.StringVar(&bf.memProfile, "memprofile", "", "write an allocation profile of the last configuration to this file and the profile at the start of its measuring phase to this file.base (go tool pprof -base FILE.base FILE)")
	fs.BoolVar(&bf.loadProcess, "load-process", false, "run the load generator (publisher and subscriber) as a child process instead of inside the server process")
	fs.StringVar(&bf.traceFile, "trace", "", "write a runtime execution trace of the measuring phases to this file (go tool trace)")
	fs.StringVar(&bf.heapProfile, "heapprofile", "", "write the live heap after the set-up of the last configuration to this file, and after its measurement to this file.after")
}

// profiles opens the profile and trace files the flags name (the
// measuring phases write them) and returns what closes them.
func (bf *Flags) profiles() (func(), error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	create := func(name string) (*os.File, error) {
		f, err := os.Create(name)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	if bf.cpuProfile != "" {
		f, err := create(bf.cpuProfile)
		if err != nil {
			return closeAll, err
		}
		profileTo = f
	}
	if bf.memProfile != "" {
		// Set once, before anything is allocated: the sampler computes its
		// next sample from the rate in force at the previous one, so a rate
		// changed later (or 0 during set-up) is not followed.
		runtime.MemProfileRate = 64 << 10
		allocProfileTo = bf.memProfile
	}
	heapProfileTo = bf.heapProfile
	if bf.traceFile != "" {
		f, err := create(bf.traceFile)
		if err != nil {
			return closeAll, err
		}
		traceTo = f
	}
	if heapProfileTo != "" && bf.memProfile == "" {
		runtime.MemProfileRate = 4 << 10
	}
	return closeAll, nil
}

// benchCounts parses --rules.
func benchCounts(list string) ([]int, error) {
	var counts []int
	for _, s := range splitComma(list) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--rules: %q is not a positive count", s)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

func printBench(res *Result, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Println(string(b))
		return
	}
	fmt.Printf("rules=%-6d rate=%d/s sent=%d received=%d lost=%d p50=%v p99=%v max=%v recorded=%d setup=%v heap=%dMB alloc/event=%dB/%d gcs=%d gc=%v cpu=%.2f load-cpu=%.2f\n",
		res.Rules, res.Rate, res.Sent, res.Received, res.Lost, res.P50.Round(time.Microsecond), res.P99.Round(time.Microsecond),
		res.Max.Round(time.Microsecond), res.Recorded, res.SetupTime.Round(time.Millisecond),
		res.HeapLive>>20, res.BytesPerEvent, res.AllocsPerEvent, res.GCs, res.GCTime.Round(time.Millisecond), res.CPU, res.LoadCPU)
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

// Once measures n installed rules at rate events a second for dur, with
// the load generator in this process or (inProcess false) its own.
func Once(ctx context.Context, start Start, brokerURL string, n, rate int, dur time.Duration, inProcess bool) (*Result, error) {
	t0 := time.Now()
	dir, err := os.MkdirTemp("", "pilothouse-bench-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// Topics of this run only (an external broker may hold retained
	// messages of earlier runs).
	base := fmt.Sprintf("bench%d", time.Now().UnixNano())
	h, err := start(ctx, dir, brokerURL, base)
	if err != nil {
		return nil, err
	}
	defer h.Stop()
	if err := benchHouse(ctx, h, base, n); err != nil {
		return nil, err
	}
	res := &Result{Rules: n, Rate: rate, SetupTime: time.Since(t0)}
	stopProfiles, ms0 := res.startMeasuring()
	defer stopProfiles()
	spec := loadSpec{Broker: h.Broker, Base: base, Rules: n, Rate: rate, Duration: dur}
	if err := res.measure(ctx, h.Engine, spec, inProcess, &ms0); err != nil {
		return nil, err
	}
	res.Recorded = benchRecorded(ctx, h.Engine, res.Sent, n)
	return res, nil
}

// benchHouse announces a synthetic Zigbee2MQTT house of n/benchProps
// sensors and lights and installs n rules, rule i firing on counter i.
func benchHouse(ctx context.Context, h *House, base string, n int) error {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pub, err := mqtt.Dial(ctx, mqtt.Options{Broker: h.Broker, ClientID: "bench-setup", Logger: log})
	if err != nil {
		return err
	}
	defer pub.Close()
	if err := pub.Publish(ctx, base+"/bridge/devices", devices.SyntheticZ2MHouse(benchSensors(n), benchProps), 1, false); err != nil {
		return err
	}
	if err := waitUntil(ctx, 60*time.Second, func() bool {
		_, ok := h.Devices.Snapshot().Get(fmt.Sprintf("bench_light_%d.set", benchSensors(n)-1))
		return ok
	}); err != nil {
		return fmt.Errorf("bench devices never appeared in the catalog: %w", err)
	}
	for i := 0; i < n; i++ {
		dev, prop := i/benchProps, i%benchProps
		prog := fmt.Sprintf(`{"name":"bench-%d","mode":"parallel","max":1000,"triggers":[{"id":"t","state":"bench_sensor_%d.count%d"}],
"steps":[{"id":"cmd","call":"bench_light_%d.set","args":{"brightness":"{{ trigger.value }}"}}]}`, i, dev, prop, dev)
		resp, err := h.Engine.Execute(ctx, engine.ExecuteRequest{Program: json.RawMessage(prog), TraceLevel: "none", Store: boolPtr(false)})
		if err != nil {
			return fmt.Errorf("installing bench rule %d: %w", i, err)
		}
		if !resp.Outcome.OK {
			return fmt.Errorf("installing bench rule %d: %s %s %v", i, resp.Outcome.Status, resp.Outcome.Error, resp.Diagnostics)
		}
	}
	return nil
}

// startMeasuring collects garbage (timing it), reads the memory
// statistics the measurement starts from (the live heap) and starts the
// profiles the flags asked for; the returned function stops them.
func (res *Result) startMeasuring() (stop func(), ms0 runtime.MemStats) {
	var stops []func()
	if profileTo != nil {
		if err := pprof.StartCPUProfile(profileTo); err == nil {
			stops = append(stops, pprof.StopCPUProfile)
		}
	}
	gcStart := time.Now()
	runtime.GC()
	res.GCTime = time.Since(gcStart)
	if allocProfileTo != "" {
		writeProfile("allocs", allocProfileTo+".base") // as of the collection above
	}
	runtime.ReadMemStats(&ms0)
	res.HeapLive = ms0.HeapAlloc
	if heapProfileTo != "" {
		writeProfile("heap", heapProfileTo)
	}
	if traceTo != nil && !trace.IsEnabled() {
		if err := trace.Start(traceTo); err == nil {
			stops = append(stops, trace.Stop)
		}
	}
	return func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}, ms0
}

// measure runs the load and records what it and the process measured:
// latencies, CPU, allocation per event and collections.
func (res *Result) measure(ctx context.Context, eng *engine.Engine, spec loadSpec, inProcess bool, ms0 *runtime.MemStats) error {
	var ms1 runtime.MemStats
	start, cpu0 := time.Now(), processCPU()
	var lr *loadResult
	var err error
	if inProcess {
		lr, err = runLoad(ctx, spec)
		if lr != nil {
			lr.LoadCPU = 0 // counted in the server's
		}
	} else {
		lr, err = runLoadProcess(ctx, spec)
	}
	if err != nil {
		return err
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
	return nil
}

// benchRecorded counts the recorded firings. The command reaches the
// subscriber before the firing is recorded: it waits (bounded) until
// every firing has been handed to the recorder.
func benchRecorded(ctx context.Context, eng *engine.Engine, sent, n int) int {
	count := func() int {
		eng.Flush()
		runs, err := eng.ListRuns(ctx, engine.RunFilter{Kind: engine.KindFiring, Limit: 1 << 30})
		if err != nil {
			return -1
		}
		return len(runs)
	}
	want := sent
	if n > 0 && want > 50*n {
		want = 50 * n // history is trimmed to 50 per rule and outcome
	}
	_ = waitUntil(ctx, 10*time.Second, func() bool { return count() >= want })
	return count()
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

// waitUntil polls cond until it holds or d passes.
func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waited %v: %w", d, ctx.Err())
		case <-tick.C:
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
