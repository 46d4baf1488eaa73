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
//   - Templates (value, availability, command) are Jinja as Home
//     Assistant renders them, through a bounded interpreter (jinja_*.go):
//     expressions, if/elif/else, for (with loop, break, continue), set,
//     namespace, whitespace control, Python's values and formatting, and
//     the filters, tests and functions value templates use (Home
//     Assistant's float/int/bool/round with defaults, multiply, iif,
//     is_defined, to_json/from_json, regex_*, timestamp_*, now()). Each
//     rendering has a work budget and values a size cap, and all the
//     renderings one message triggers share a budget too (limits.go):
//     a template comes from whoever may publish discovery. github.com/nikolalohinski/gonja/v2
//     was evaluated and not adopted (see template.go). A template the
//     interpreter cannot compile makes its state "unsupported" (tag,
//     description, Live.Unsupported) or its command not offered, and the
//     device partial; a value is never guessed.
//   - Messages are ingested one at a time, in the order the connection
//     delivers them, in two phases (ingest.go): decoding, rendering and
//     building discovery's devices happen before the catalog's lock is
//     taken, and the lock is held only to apply the results, so lookups,
//     live values, /healthz and commands never wait for a template.
//   - Home Assistant discovery is read as Home Assistant reads it: topics
//     <prefix>/<component>/[<node_id>/]<object_id>/config (also for
//     device-based discovery), abbreviations or full key names, '~',
//     device-based discovery checked whole (device with an identifier,
//     origin, components with known platforms, no other root keys) and
//     its shared options (availability*, payload_(not_)available,
//     state_topic, command_topic) inherited, migrate_discovery. Components
//     Home Assistant has and this package does not model (camera, vacuum,
//     tag, …) join their device, which says what it lacks; unknown ones
//     are refused with a log line.
//   - Zigbee2MQTT schemas say what Zigbee2MQTT takes: numeric presets by
//     name or value (a name is sent as its value, as its frontend does),
//     value_step as the hint "x-step" (never multipleOf), lists with their
//     item type and length limits, composites as states whenever published,
//     a property exposed twice as a union, the keys Zigbee2MQTT documents
//     for lights (transition, move/step, colour forms), and <device>.get
//     (risk read) for gettable properties. What cannot be modelled is
//     tagged partial/unmodelled on the device entry, logged once, and
//     counted (Catalog.Coverage, /healthz).
//   - Risk: pilotage.DeviceTypes types a device and gives its actions'
//     risk (locks, covers, garage door openers, sirens, alarm panels, water
//     valves security; thermostats and radiator valves control), for
//     Zigbee2MQTT devices by their exposes and description, for Home
//     Assistant devices by their entities' components (config and
//     diagnostic entities aside) and their name and model; the closed-sets
//     guide prints the same table. Notification channels are
//     external.
//   - Live values, availability and last-seen never touch entries: Gen and
//     hashes change only when discovery changes an entry. Revision is the
//     entry's content hash.
//   - Discovery is incremental (commit.go): a Home Assistant config
//     rebuilds the devices it belongs to, before and after, and commit
//     applies only their entries, routes, actions and live values. A
//     Snapshot is immutable and shares all else with the previous one
//     (copy on write of a device's id shard and of the sorted chunks its
//     entries are in), so a discovery message costs the same at 300 or
//     3,000 devices (TestDiscoveryCostFlat) and readers never lock. A
//     Zigbee2MQTT device list names every device: it compares all specs,
//     by pointer (unchanged devices keep theirs). Between such full
//     rebuilds a Home Assistant device claims, keeps and leaves its id
//     and its entities' segments on its own, with the same rules (the id
//     stays with the device, one it leaves stays reserved, it gets that
//     back).
//   - Malformed payloads are logged with their topic and skipped; the last
//     good discovery for that topic stays.
package devices
