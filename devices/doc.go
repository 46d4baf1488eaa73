// Package devices owns the live device world: Zigbee2MQTT and Home Assistant
// discovery turned into catalog entries, live values and command publishing.
// It is the facade and owns the live Catalog (ingestion, commit, live
// values, actions, snapshots); internal/ha and internal/z2m turn each
// source's messages into device specs, over the records of internal/model.
//
// The decisions behind its ids, states, templates and risk are in
// docs/architecture.md ("devices: decisions").
package devices
