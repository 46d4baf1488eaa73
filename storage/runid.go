package storage

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"time"
)

// runIDEncoding is base32 "extended hex" (0-9, a-v): unlike the standard
// alphabet it sorts like the bytes it encodes, so ids sort by time.
var runIDEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

const runIDPrefix = "run_"

// NewRunID returns a fresh run id: "run_" and 26 base32 characters encoding
// a 48-bit Unix millisecond time followed by 80 random bits. Ids sort by
// creation time to the millisecond.
func NewRunID() string {
	return newRunID(time.Now())
}

func newRunID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails (Go 1.24+)
	return runIDPrefix + runIDEncoding.EncodeToString(b[:])
}

// RunIDTime returns the creation time encoded in a NewRunID id.
func RunIDTime(id string) (time.Time, bool) {
	s, ok := strings.CutPrefix(id, runIDPrefix)
	if !ok || len(s) != 26 {
		return time.Time{}, false
	}
	b, err := runIDEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return time.Time{}, false
	}
	ms := binary.BigEndian.Uint64(b[:8]) >> 16
	return time.UnixMilli(int64(ms)).UTC(), true
}
