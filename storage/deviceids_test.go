package storage

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestDeviceIDsRoundTrip(t *testing.T) {
	s, dir := openTest(t)
	ctx := context.Background()
	steps := []struct {
		put  []DeviceID
		del  []string
		want []DeviceID
	}{
		{put: []DeviceID{{"ha:ids:ws-1", "outdoor_weather", "outdoor_weather"}, {"ha:ids:evil", "outdoor_weather_2", "outdoor_weather"}},
			want: []DeviceID{{"ha:ids:evil", "outdoor_weather_2", "outdoor_weather"}, {"ha:ids:ws-1", "outdoor_weather", "outdoor_weather"}}},
		// The original leaves and the newcomer renames itself to its id:
		// an id moves between keys within one batch.
		{put: []DeviceID{{"ha:ids:evil", "outdoor_weather", "outdoor_weather"}}, del: []string{"ha:ids:ws-1"},
			want: []DeviceID{{"ha:ids:evil", "outdoor_weather", "outdoor_weather"}}},
		{del: []string{"ha:ids:evil", "never-stored"}, want: nil},
	}
	for i, st := range steps {
		if err := s.SaveDeviceIDs(ctx, st.put, st.del); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, err := s.LoadDeviceIDs(ctx)
		if err != nil || !reflect.DeepEqual(got, st.want) {
			t.Fatalf("step %d: LoadDeviceIDs = %v, %v; want %v", i, got, err, st.want)
		}
	}
	// Two keys may not hold one id: the batch fails whole.
	err := s.SaveDeviceIDs(ctx, []DeviceID{{"a", "x", "x"}, {"b", "x", "x"}}, nil)
	if err == nil {
		t.Fatal("two keys holding one id were stored")
	}
	if got, _ := s.LoadDeviceIDs(ctx); got != nil {
		t.Fatalf("a failed batch left %v", got)
	}
	if err := s.SaveDeviceIDs(ctx, []DeviceID{{"", "x", "x"}}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
	// Assignments survive a reopen.
	if err := s.SaveDeviceIDs(ctx, []DeviceID{{"z2m:0x1", "hall_motion", "hall_motion"}}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, _ := s2.LoadDeviceIDs(ctx); !reflect.DeepEqual(got, []DeviceID{{"z2m:0x1", "hall_motion", "hall_motion"}}) {
		t.Fatalf("after reopen: %v", got)
	}
}
