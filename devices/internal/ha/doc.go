// Package ha owns Home Assistant MQTT discovery: configs in, device specs
// with their state routes and command actions out.
package ha
