// Package z2m owns Zigbee2MQTT: the bridge's device list and events in,
// device specs with their state routes and set/get actions out.
package z2m
