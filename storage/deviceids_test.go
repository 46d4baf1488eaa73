package storage

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func dev(key, id, base string) DeviceID { return DeviceID{Key: key, ID: id, Base: base} }

func TestDeviceIDsRoundTrip(t *testing.T) {
	s, dir := openTest(t)
	ctx := context.Background()
	left := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	renamed := DeviceID{Key: "z2m:0x1", ID: "hall_motion", Base: "hall_motion", Left: left}
	steps := []struct {
		put  []DeviceID
		del  []string
		want []DeviceID
	}{
		{put: []DeviceID{dev("ha:ids:ws-1", "outdoor_weather", "outdoor_weather"), dev("ha:ids:evil", "outdoor_weather_2", "outdoor_weather")},
			want: []DeviceID{dev("ha:ids:evil", "outdoor_weather_2", "outdoor_weather"), dev("ha:ids:ws-1", "outdoor_weather", "outdoor_weather")}},
		// An id moves between keys within one batch.
		{put: []DeviceID{dev("ha:ids:evil", "outdoor_weather", "outdoor_weather")}, del: []string{"outdoor_weather_2"},
			want: []DeviceID{dev("ha:ids:evil", "outdoor_weather", "outdoor_weather")}},
		{del: []string{"outdoor_weather", "never-stored"}, want: nil},
		// A key holds one id and keeps another reserved (renamed).
		{put: []DeviceID{dev("z2m:0x1", "hall_motion", "hall_motion")}, want: []DeviceID{dev("z2m:0x1", "hall_motion", "hall_motion")}},
		{put: []DeviceID{renamed, dev("z2m:0x1", "corridor", "corridor")},
			want: []DeviceID{dev("z2m:0x1", "corridor", "corridor"), renamed}},
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
	final := steps[len(steps)-1].want
	// A key may not hold two ids: the batch fails whole.
	if err := s.SaveDeviceIDs(ctx, []DeviceID{dev("a", "x", "x"), dev("a", "y", "y")}, []string{"corridor"}); err == nil {
		t.Fatal("a key holding two ids was stored")
	}
	if got, _ := s.LoadDeviceIDs(ctx); !reflect.DeepEqual(got, final) {
		t.Fatalf("a failed batch left %v", got)
	}
	if err := s.SaveDeviceIDs(ctx, []DeviceID{dev("", "x", "x")}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
	// Assignments survive a reopen.
	s.Close()
	s2, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, _ := s2.LoadDeviceIDs(ctx); !reflect.DeepEqual(got, final) {
		t.Fatalf("after reopen: %v", got)
	}
}

// TestDeviceIDsMigration7: the assignments of a version 6 database are
// kept, each held by its key.
func TestDeviceIDsMigration7(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	db := openAtVersion(t, dir, 6)
	if _, err := db.ExecContext(ctx, `INSERT INTO device_ids (key, id, base, assigned_at) VALUES ('ha:ids:ws-1', 'outdoor_weather', 'outdoor_weather', 1), ('z2m:0x1', 'hall_motion', 'hall_motion', 2)`); err != nil {
		t.Fatal(err)
	}
	s2 := migrated(t, db, dir)
	want := []DeviceID{dev("ha:ids:ws-1", "outdoor_weather", "outdoor_weather"), dev("z2m:0x1", "hall_motion", "hall_motion")}
	if got, err := s2.LoadDeviceIDs(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after migration 8: %v, %v; want %v", got, err, want)
	}
}
