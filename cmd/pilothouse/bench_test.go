package main

import (
	"context"
	"testing"
	"time"
)

// TestBenchMeasuresRealFirings runs the shipped benchmark briefly: every
// event becomes a command seen by the subscriber, and every firing is
// recorded.
func TestBenchMeasuresRealFirings(t *testing.T) {
	res, err := benchOnce(context.Background(), "", 3, 200, 300*time.Millisecond, true)
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
