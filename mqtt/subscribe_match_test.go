package mqtt

import "testing"

func TestTopicMatch(t *testing.T) {
	for _, c := range []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/b", "a/b/c", false},
		{"a/b/c", "a/b", false},
		{"a/+", "a/b", true},
		{"a/+", "a/", true}, // an empty level is a level
		{"a/+", "a/b/c", false},
		{"+/b", "a/b", true},
		{"+/+", "a/b", true},
		{"a/#", "a", true}, // "#" includes the parent level
		{"a/#", "a/b/c", true},
		{"a/#", "b/c", false},
		{"#", "a/b", true},
		{"#", "$SYS/broker", false}, // wildcards at the first level skip $ topics
		{"+/broker", "$SYS/broker", false},
		{"$SYS/#", "$SYS/broker", true},
		{"zigbee2mqtt/#", "zigbee2mqtt/hall_motion", true},
		{"zigbee2mqtt/+/set", "zigbee2mqtt/hall_light/set", true},
		{"zigbee2mqtt/+/set", "zigbee2mqtt/hall_light", false},
		{"a/b/#", "a/b", true},
		{"a/b/#", "a/bc", false},
		{"", "a", false},
	} {
		if got := TopicMatch(c.filter, c.topic); got != c.want {
			t.Errorf("TopicMatch(%q, %q) = %v, want %v", c.filter, c.topic, got, c.want)
		}
	}
}

func BenchmarkTopicMatch(b *testing.B) {
	for b.Loop() {
		TopicMatch("zigbee2mqtt/+/set", "zigbee2mqtt/hall_light/set")
	}
}
