// Package clock reads and describes time for rules: durations, cron
// schedules on the wall clock and in words, and sun events.
package clock
