// Package bucket is the token bucket every rate bound of the house uses:
// tokens refilled with time at a rate, up to a capacity.
package bucket

import "time"

// Bucket holds Tokens as of its last Level; the zero Bucket is full at
// its first Level. Whoever spends subtracts from Tokens (it may go below
// zero: a debt the refill pays first). It is not safe for concurrent use.
type Bucket struct {
	Tokens float64
	at     time.Time
}

// Level refills b up to now, at rate tokens a second up to capacity, and
// returns what it holds.
func (b *Bucket) Level(now time.Time, rate, capacity float64) float64 {
	if b.at.IsZero() {
		b.Tokens, b.at = capacity, now
	} else if d := now.Sub(b.at).Seconds(); d > 0 {
		b.Tokens, b.at = min(capacity, b.Tokens+d*rate), now
	} else if d < 0 {
		b.at = now // a clock set back must not stop the refill until it catches up
	}
	return b.Tokens
}
