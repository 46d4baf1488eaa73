//go:build race

package mcpserver_test

const raceEnabled = true
