//go:build race

package jinja

// raceSlowdown scales the time bounds of tests: the race detector makes
// the interpreter several times slower.
const raceSlowdown = 4
