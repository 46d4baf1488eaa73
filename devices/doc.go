// Package devices owns the live device world: Zigbee2MQTT and Home Assistant
// discovery turned into catalog entries, live values and command publishing.
//
// The decisions behind its ids, states, templates and risk are in
// docs/architecture.md ("devices: decisions").
package devices
