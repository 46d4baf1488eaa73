package history

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

// MaxValueBytes bounds a recorded value's JSON: anything from the bus is
// recorded for 10 days, and a chart or since() of a bigger value needs
// only the time it changed (Home Assistant's recorder keeps 255
// characters of a state).
const MaxValueBytes = 1024

// itemOverhead is what a queued change costs besides its value.
const itemOverhead = 64

// item makes v's queue item and its cost in queue bytes: a value over
// MaxValueBytes is replaced by its size, so the queue holds no big value.
func item(id string, v any, t time.Time) (histItem, int) {
	it := histItem{id: id, v: v, t: t}
	n := jsonSize(v, maxSized)
	if n <= MaxValueBytes {
		return it, itemOverhead + len(id) + n
	}
	it.v, it.big = nil, n
	return it, itemOverhead + len(id)
}

// maxSized stops sizing a value beyond the bus's message bound, which no
// decoded value reaches, so a marker's size is the value's.
const maxSized = 1 << 20

// jsonSize estimates v's JSON size (escapes not counted), stopping
// once it is past stop.
func jsonSize(v any, stop int) int {
	switch v := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		return len(v) + 2
	case float64, int, int64:
		return 24
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + 4 + jsonSize(e, stop-n)
			if n > stop {
				return n
			}
		}
		return n
	case []any:
		n := 2
		for _, e := range v {
			n += 1 + jsonSize(e, stop-n)
			if n > stop {
				return n
			}
		}
		return n
	default: // not from the bus's JSON: rare, marshalled to be sure
		b, err := json.Marshal(v)
		if err != nil {
			return 0
		}
		return len(b)
	}
}

// tooLargeJSON is the marker recorded for a value of n bytes.
func tooLargeJSON(n int) string {
	return `{"too_large_bytes":` + strconv.Itoa(n) + `}`
}

// Same reports whether v is what recorded, a value read back from the
// history, records: the same value, or the marker of a value too large.
func Same(recorded, v any) bool {
	return rules.SameValue(recorded, v) || SameRecorded(recorded, v)
}

// SameRecorded reports whether recorded, a value read back from the
// history, is the marker recorded for v: a value over MaxValueBytes is
// the same as the one before a restart when its size is (its content is
// not kept to tell them apart).
func SameRecorded(recorded, v any) bool {
	m, ok := recorded.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	n, ok := m["too_large_bytes"].(float64)
	return ok && n > MaxValueBytes && recordedSize(v) == int(n)
}

// recordedSize is the size a marker records for v, or 0 when v is
// recorded itself.
func recordedSize(v any) int {
	if n := jsonSize(v, maxSized); n > MaxValueBytes {
		return n
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) <= MaxValueBytes {
		return 0
	}
	return len(b)
}
