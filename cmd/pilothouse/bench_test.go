package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/bench"
)

// TestBenchMeasuresRealFirings runs the shipped benchmark briefly: every
// event becomes a command seen by the subscriber, and every firing is
// recorded.
func TestBenchMeasuresRealFirings(t *testing.T) {
	res, err := bench.Once(context.Background(), startBenchHouse, "", 3, 200, 300*time.Millisecond, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Received != res.Sent || res.Lost != 0 || res.Recorded != res.Sent {
		t.Fatalf("bench result %+v", res)
	}
	if res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 {
		t.Fatalf("latency figures %+v", res)
	}
}

// TestBenchLoadProcess runs the real binary's bench with the load generator
// in its own process (pilothouse bench-load) and checks what it reports.
func TestBenchLoadProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	out, err := exec.Command(bin, "bench", "--rules", "3", "--rate", "200", "--duration", "300ms", "--json", "--load-process").Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var res bench.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("bench printed %q: %v", out, err)
	}
	if res.Sent == 0 || res.Received != res.Sent || res.Lost != 0 || res.Recorded != res.Sent || res.LoadCPU <= 0 || res.CPU <= 0 {
		t.Fatalf("bench result %+v", res)
	}
}
