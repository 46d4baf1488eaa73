package bench

import (
	"reflect"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// TestLoadClientRoundTrip: the load generator's own MQTT client connects
// to the embedded broker, and a publish reaches its subscription intact.
func TestLoadClientRoundTrip(t *testing.T) {
	b, err := mqtt.StartBroker("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	sub, err := dialLoad(b.URL(), "bench-test-sub", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	got := make(chan string, 1)
	if err := sub.subscribe("house/+/set", func(topic string, p []byte) { got <- topic + " " + string(p) }); err != nil {
		t.Fatal(err)
	}
	pub, err := dialLoad(b.URL(), "bench-test-pub", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.close()
	if err := pub.publish("house/light_1/set", []byte(`{"brightness":7}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g != `house/light_1/set {"brightness":7}` {
			t.Fatalf("received %q", g)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the publish never reached the subscription")
	}
}

func TestBenchCounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "1,1000, 10000", want: []int{1, 1000, 10000}},
		{in: "3", want: []int{3}},
		{in: "1,,2", want: []int{1, 2}},
		{in: "0", bad: true},
		{in: "x", bad: true},
	} {
		got, err := benchCounts(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("benchCounts(%q) = %v, %v", tc.in, got, err)
		}
	}
}
