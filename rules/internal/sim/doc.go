// Package sim is the simulated World of test runs: scratch state, a virtual
// clock, and the scenario that fires a program's triggers.
package sim
