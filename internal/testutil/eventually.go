// Package testutil is what the tests of several packages share: one
// poll-with-deadline helper (like nats-server's checkFor) instead of a
// copy per package. Only tests import it.
package testutil

import (
	"testing"
	"time"
)

// pollEvery is the polling interval: how often a condition is looked at,
// not a synchronisation.
const pollEvery = 5 * time.Millisecond

// Eventually polls cond until it holds, and fails the test, naming what it
// waited for, when d passes first.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// Within polls cond until it holds (true) or d passes (false), for a
// caller that reports the failure itself (with the state it saw).
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}
