// Package devices owns the live device world: it turns Zigbee2MQTT
// bridge/devices and Home Assistant MQTT discovery into Pilotage catalog
// entries (device, state, event, action), keeps live values beside them and
// publishes commands. HandleMessage is the single ingestion entry point.
//
// Decisions worth knowing (the guides repeat the user-facing ones):
//
//   - Ids derive from the friendly/device name: lowercase ASCII, every other
//     run of characters becomes one '_' ("Hallway Motion" -> hallway_motion,
//     "living_room/remote" -> living_room_remote). States are
//     <device>.<property>, events <device>.action, the device command is
//     <device>.set. A Home Assistant entity that is not the device's primary
//     one (name null or equal to the device name) gets its own key:
//     <device>.<key> for its state, <device>.<key>.set (or .press) for its
//     command.
//   - Device ids are first come, first served and pinned to the device's
//     stable key (Zigbee2MQTT IEEE address, Home Assistant identifiers,
//     unique_id or discovery topic; see IDAssignment), persisted through
//     Options.IDs: a device whose name asks for a taken id gets base_2,
//     base_3, … and keeps it across restarts whatever order discovery
//     arrives in, so no newcomer, from either source, can take a known
//     device's id (and its rules). A Home Assistant device keeps its id
//     whatever name later discovery messages give it (as Home Assistant
//     pins entity ids to unique ids: a rename changes the name, not the
//     id); a device renamed in Zigbee2MQTT (its topics move too) takes its
//     new name's id. An id a device leaves (discovery removed, gone from
//     the Zigbee2MQTT list, renamed in Zigbee2MQTT) stays reserved for it
//     for 30 days, logged: it gets the id back if it returns, and no other
//     device takes it meanwhile. Within a Home Assistant device, each
//     discovery entity keeps its segment (outdoor_weather.temperature) the
//     same way, so an entity joining a device with its identifiers never
//     takes a state id from one that came first.
//     Zigbee2MQTT's own Home Assistant discovery of a device
//     ("zigbee2mqtt_<ieee>") shares the native device's key; the native
//     device wins.
//   - Binary Zigbee2MQTT properties whose value_on/value_off are booleans
//     are JSON booleans; otherwise the state is the raw payload value with
//     an enum of the two (e.g. "ON"/"OFF", "LOCK"/"UNLOCK"), so rules compare
//     against what the device sends and what /set accepts. "x-active-value":
//     false marks inverted sensors (Aqara contact: true = closed).
//   - Home Assistant states are normalised to the same vocabulary: switches
//     and lights "ON"/"OFF", binary sensors booleans, locks
//     locked/unlocked/locking/unlocking/jammed/open/opening, covers
//     open/opening/closed/closing/stopped plus position 0..100. Command
//     inputs use the Zigbee2MQTT keys (state, brightness, color_temp,
//     position, occupied_heating_setpoint, system_mode) and Call translates
//     to the configured payloads and topics.
//   - Value templates: only {{ value }} and value_json paths with float, int,
//     round(n), string, lower, upper, trim filters. Anything else marks the
//     state "unsupported" (tag, description, Live.Unsupported); its value is
//     never guessed. Command templates: literal text with {{ value }}-style
//     substitutions only, else that command field is not offered.
//   - Zigbee2MQTT schemas say what Zigbee2MQTT takes: numeric presets by
//     name or value (a name is sent as its value, as its frontend does),
//     value_step as the hint "x-step" (never multipleOf), lists with their
//     item type and length limits, composites as states whenever published,
//     a property exposed twice as a union, the keys Zigbee2MQTT documents
//     for lights (transition, move/step, colour forms), and <device>.get
//     (risk read) for gettable properties. What cannot be modelled is
//     tagged partial/unmodelled on the device entry, logged once, and
//     counted (Catalog.Coverage, /healthz).
//   - Risk: pilotage.DeviceTypes types a device and gives its set action's
//     risk (locks, covers, garage door openers, sirens, alarm panels, water
//     valves security; thermostats and radiator valves control); the
//     closed-sets guide prints the same table. Notification channels are
//     external.
//   - Live values, availability and last-seen never touch entries: Gen and
//     hashes change only when discovery changes an entry. Revision is the
//     entry's content hash.
//   - Malformed payloads are logged with their topic and skipped; the last
//     good discovery for that topic stays.
package devices
