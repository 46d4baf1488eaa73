// Package healthnote says what each /healthz counter means: one table of
// notes, and a counter read through it as a sentence with what to do.
package healthnote

// Kind says how a /healthz counter reads when it is not zero.
type Kind int

const (
	// Trouble: something was lost, refused or cut: the health page
	// lists it under what needs a look, and the header links to it.
	Trouble Kind = iota
	// Work: work done as usual (records written, connections made).
	Work
	// Level: a level now or a bound (queued, live, the maximum).
	Level
)

// Note explains one number of /healthz: Means says what it
// counts, its value where %s is; Next what to do about it.
type Note struct {
	Path  string // its JSON path; "*" stands for a map's key (a channel's name)
	Kind  Kind
	Means string
	Next  string
}

// Next steps shared by several counters.
const (
	nextStorage = "The header's status says whether storage writes now; if it still fails, free disk space or stop the program holding the database (a backup?)."
	nextSize    = "The server log names each topic; fix what publishes it, or raise mqtt.max_message_bytes if such messages are expected."
	nextTokens  = "Something is trying wrong tokens: check the clients' configured tokens; if you do not know them, keep the server off untrusted networks."
	nextLoad    = "The server is past its capacity for moments: fewer or calmer rules, or a faster machine (docs/performance.md)."
)

// Notes is the one table the health page reads /healthz through;
// a counter it lacks is still shown, by its path, and the server's tests
// fail until it has a line here.
var Notes = []Note{
	{"storage.failures", Trouble, "%s writes to the database failed since the start: what they carried was not stored.", nextStorage},

	{"history.written", Work, "%s state changes were recorded in the history.", ""},
	{"history.same", Work, "%s values arrived equal to their state's recorded one (no new history row).", ""},
	{"history.dropped", Trouble, "%s state changes were not recorded in the history: its queue was full, so the charts have a hole there.", "A device publishing very often fills the queue: the Logbook and the server log show the busiest devices."},
	{"history.failed", Trouble, "%s state changes were lost to history writes that failed.", nextStorage},
	{"history.queued", Level, "%s state changes wait to be written to the history.", ""},
	{"history.queued_bytes", Level, "Bytes the queued state changes hold, about: %s.", ""},
	{"history.too_large", Trouble, "%s values were over 1 KiB: the history keeps a marker with their size instead.", "A device publishes huge states; fix its publisher if their history matters."},
	{"history.trimmed", Trouble, "%s history rows were deleted (the oldest first) to stay within history.max_rows: charts begin later than the retention.", "Raise history.max_rows, or shorten history.retention to what you need."},
	{"history.trimmed_for_bytes", Trouble, "%s history rows were deleted (the oldest first) to stay within the history's 256 MiB.", "A device publishes large values often; fix its publisher or shorten history.retention."},
	{"history.max_rows", Level, "The history keeps at most %s state changes (history.max_rows).", ""},
	{"history.max_bytes", Level, "The history keeps at most %s bytes of values.", ""},

	{"logbook.written", Work, "%s logbook entries were written.", ""},
	{"logbook.dropped", Trouble, "%s logbook entries were lost: the queue in front of its writer was full.", "A flood of events filled it (see logbook.dropped_bus); the server log says when."},
	{"logbook.dropped_bus", Trouble, "%s of the lost logbook entries were the devices' (events, devices going offline and back, helpers' own changes, such as the end of a timer no rule started).", "A device floods the bus with events: find it in the Logbook and calm or remove it."},
	{"logbook.failed", Trouble, "%s logbook entries were lost to writes that failed.", nextStorage},
	{"logbook.trimmed", Trouble, "%s logbook entries were deleted (the oldest first) to stay within its 100,000 rows: the Logbook begins later than the run retention.", "Nothing to do unless you need older entries: shorten retention, or calm the busiest devices and rules."},
	{"logbook.trimmed_bus", Trouble, "%s of the deleted logbook entries were the devices' (events, availability, helpers' own changes, such as the end of a timer no rule started), which keep at most half of the rows.", "A busy device's events push out older ones: calm it if you need them."},
	{"logbook.trimmed_guest", Trouble, "%s of the deleted rules' lines were other principals' than the owner's, each trimmed within its own part, so the owner's lines stay.", "A guest's rule fires or is switched very often: look at the Runs page for which, and ask its principal."},
	{"logbook.dropped_guest", Trouble, "%s of the lost logbook entries were other principals' rules' lines, which take at most a quarter of the queue.", "A guest's rule fires very often: look at the Runs page for which, and ask its principal."},
	{"logbook.trimmed_firings", Trouble, "%s of the deleted logbook entries were rules' firings and changes, which keep at most a quarter and a twentieth of the rows.", "A rule fires very often: look at the Runs page for which."},
	{"logbook.cut", Trouble, "%s logbook entries had their text cut to its bound (each says so, with the full size).", "A device sends very long event values; nothing is lost that a rule reads."},
	{"logbook.max_rows", Level, "The logbook keeps at most %s entries.", ""},

	{"devices.total", Level, "The house knows %s devices.", ""},
	{"devices.partial", Trouble, "%s devices are only partly modelled: some of their states or actions cannot be used.", "The Devices page lists what each one lacks (its \"See which\" link)."},
	{"devices.unmodelled", Trouble, "%s devices are not modelled at all: rules cannot use them.", "The Devices page says why for each (its \"See which\" link)."},
	{"devices.configs_read", Work, "%s discovery configs (Home Assistant's, and Zigbee2MQTT's device and group lists) were read.", ""},
	{"devices.refused.oversized_messages", Trouble, "%s MQTT messages were refused unread as too large: a discovery config over 256 KiB leaves its device out or unchanged, a state over it keeps its old value, a Zigbee2MQTT device list over mqtt.max_message_bytes is not read.", nextSize},
	{"devices.refused.template_work_skipped", Trouble, "%s Home Assistant template renderings were skipped: their message used up its work budget; their states keep their values.", "A discovery config's templates are too costly: the device page's states say which; fix the config at its source."},
	{"devices.refused.template_work_throttled", Trouble, "%s Home Assistant template renderings were skipped: template work went over its rate; their states keep their values and say why.", "A device publishes too often for its templates: calm it, or simplify its discovery config."},
	{"devices.refused.z2m_group_lists_refused", Trouble, "%s Zigbee2MQTT group lists (bridge/groups) were refused as malformed or too large: the catalog keeps the groups it had.", "The log line \"zigbee2mqtt bridge/groups refused\" says where the list is wrong; check the Zigbee2MQTT version or who else publishes on its bridge topics."},
	{"devices.refused.bridge_devices_over_bound", Trouble, "%s devices of the last Zigbee2MQTT device list are not modelled: past the bounds of a list's work (1,024 exposes and features a device, nested 12 deep, 65,536 a list); each says which in its description.", "A publisher on the bridge's topic lists devices no network has: find it (the log names the list's first such device), or check Zigbee2MQTT's definitions."},
	{"devices.refused.template_failures", Trouble, "%s Home Assistant template renderings failed (over their budget, a type error, …); their states keep their values.", "/healthz devices.refused.last_template_failure names the latest one's state and why."},

	{"http.connections", Level, "%s HTTP connections are open now.", ""},
	{"http.connections_closed_over_limit", Trouble, "%s idle HTTP connections were closed to make room under limits.max_connections.", "A client opens many connections; raise limits.max_connections if they are all yours."},
	{"http.connections_refused", Trouble, "%s HTTP connections were refused: limits.max_connections were open.", "Find the client holding many connections open, or raise limits.max_connections."},
	{"http.streams", Level, "%s event streams (web pages, MCP streams) are open now.", ""},
	{"http.streams_refused", Trouble, "%s event streams were refused over limits.max_streams: those pages do not update live.", "Close unused tabs, or raise limits.max_streams."},
	{"http.hosts_refused", Trouble, "%s requests were refused for a Host name not allowed (DNS rebinding guard).", "If you reach the server by a name of your own, add it to the allowed hosts (docs/configuration.md)."},
	{"http.bodies_refused", Trouble, "%s request bodies were refused over limits.max_request_bytes.", "A client sends huge requests; check it, or raise limits.max_request_bytes."},
	{"http.bodies_late", Trouble, "%s connections were closed: their body did not arrive within 10 s.", "A slow or stuck client; usually nothing to do."},
	{"http.responses_cut", Trouble, "%s connections were closed: their client took nothing of a response for 30 s.", "A stuck or hostile client held a page open; usually nothing to do, unless it is your own slow network."},
	{"http.bearer_tokens_failed", Trouble, "%s requests came with a wrong token (MCP, the house API, the web login, the approvals API).", nextTokens},
	{"http.bearer_tokens_throttled", Trouble, "%s requests were refused unread after too many wrong tokens from their address.", nextTokens},

	{"mcp_sessions.live", Level, "%s MCP sessions are open now.", ""},
	{"mcp_sessions.ended_idle", Work, "%s MCP sessions ended after an idle hour.", ""},
	{"mcp_sessions.ended_over_limit", Trouble, "%s MCP sessions were ended to make room for new ones (limits.max_sessions).", "A client opens a new session per request; reuse one, or raise limits.max_sessions."},
	{"mcp_sessions.ended_by_client", Work, "%s MCP sessions were ended by their client.", ""},
	{"mcp_sessions.refused", Trouble, "%s MCP sessions were refused over limits.max_sessions.", "A client opens sessions without ending them; raise limits.max_sessions if they are yours."},
	{"mcp_sessions.unknown_refused", Trouble, "%s MCP requests were refused for a session that is not the caller's (ended, never issued, another login's).", "A client kept a session id across a restart; it starts a new session by itself."},

	{"load.mqtt.busy", Level, "The busiest MQTT handler ran for a fraction %s of the last few seconds.", ""},
	{"load.mqtt.backpressured", Trouble, "%s MQTT messages waited for the rule engine to catch up (the broker held them back).", nextLoad},
	{"load.mqtt.waited_ms", Trouble, "MQTT messages waited %s ms in all for the rule engine.", nextLoad},
	{"load.mqtt.dropped", Trouble, "%s MQTT messages were lost: their handler was stuck for 2 s.", nextLoad},
	{"load.mqtt.oversized", Trouble, "%s MQTT messages over mqtt.max_message_bytes were skipped as they arrived.", nextSize},
	{"load.mqtt.unread_bytes", Level, "Bytes from the broker waiting to be read now: %s.", ""},
	{"load.recorder.written", Work, "%s run records were stored.", ""},
	{"load.recorder.superseded", Work, "%s firings were trimmed by the retention (50 per rule and outcome) before they were written.", ""},
	{"load.recorder.summarized", Trouble, "%s firings were stored without their trace: the recorder's queue was full.", nextLoad},
	{"load.recorder.dropped", Trouble, "%s run records were lost: the recorder's queue and its summaries were full.", nextLoad},
	{"load.recorder.failed", Trouble, "%s run records were lost to writes that failed.", nextStorage},
	{"load.recorder.queued", Level, "%s run records wait to be written.", ""},
	{"load.recorder.trimmed", Work, "%s stored firings were deleted to keep each rule's count and bytes (limits.max_stored_rule_bytes).", ""},
	{"load.recorder.trimmed_principal", Trouble, "%s stored firings were deleted to keep a login's bytes within limits.max_stored_firing_bytes.", "One login's rules record a lot; raise the limit if you need their older firings."},
	{"load.firings.running", Level, "%s firings are running now.", ""},
	{"load.firings.slots", Level, "Firings run in %s slots.", ""},
	{"load.firings.waiting", Trouble, "%s firings wait for a run slot now.", nextLoad},
	{"load.firings.oldest_wait_ms", Trouble, "The oldest waiting firing has waited %s ms.", nextLoad},
	{"load.offline_changes", Work, "%s state changes came from devices reporting themselves offline: no trigger fired on them, and rules read no value of them.", ""},
	{"load.selectors.now", Trouble, "%s triggers by selector address more states than they watch.", "pilothouse_rules names them; narrow them with an area, type or tag."},
	{"load.selectors.total", Trouble, "A trigger by selector went over the states it watches %s times since the start.", "pilothouse_rules names them; narrow them with an area, type or tag."},

	{"broker.oversized_packets", Trouble, "%s clients were disconnected from the embedded broker for a packet over mqtt.max_message_bytes.", nextSize},
	{"broker.retain_refused", Trouble, "%s messages were delivered but not retained: the embedded broker holds mqtt.embedded_max_retained_bytes.", "A client retains too much; raise mqtt.embedded_max_retained_bytes or clear its retained topics."},
	{"broker.retained_bytes", Level, "The embedded broker retains %s bytes of messages now.", ""},
	{"broker.auth_refused", Trouble, "%s connections to the embedded broker were refused for their credentials.", "Check the clients' mqtt.embedded_users credentials."},
	{"broker.auth_throttled", Trouble, "%s connections to the embedded broker were refused unread after too many wrong passwords from their address.", "Check the clients' mqtt.embedded_users credentials."},

	{"mqtt.connects", Work, "%s connections to the broker were made.", ""},
	{"mqtt.outages", Trouble, "The connection to the broker was lost %s times: events meanwhile were missed.", "The Logbook lists each loss and return; check the broker and the network."},
	{"mqtt.last_outage.seconds", Trouble, "The last broker outage lasted %s s.", "The Logbook lists each loss and return; check the broker and the network."},
	{"mqtt.silent_drops", Trouble, "%s broker connections were dropped because the broker sent nothing for 8 s (frozen or unreachable).", "Check the broker's load and the network between it and Pilothouse."},
	{"mqtt.takeovers", Trouble, "Another client took Pilothouse's broker session %s times (the same client id).", "Give each Pilothouse its own mqtt.client_id, and stop any second server on this data."},
	{"mqtt.takeovers_in_a_row", Trouble, "The session is being taken over now, %s times in a row.", "Give each Pilothouse its own mqtt.client_id, and stop any second server on this data."},
	{"mqtt.reconnects", Work, "%s connections to the broker were made after the first.", ""},
	{"mqtt.last_connect_error.failed_attempts", Trouble, "%s attempts to connect to the broker failed.", "/healthz mqtt.last_connect_error says the last reason; check mqtt.broker and its credentials."},

	{"served_runs.in_flight_bytes", Level, "Memory counted for stored runs and execute answers being served now: %s bytes.", ""},
	{"served_runs.max_bytes", Level, "At most %s bytes of stored runs and execute answers are served at once.", ""},
	{"served_runs.refused", Trouble, "%s reads of stored runs or execute answers found no room: limits.max_served_run_bytes were being served (a test run's answer is refused, a deploy's trace cut to the summary).", "Clients read many large runs or leave large answers unread; retry, or raise limits.max_served_run_bytes."},

	{"runs.denied_unstored", Trouble, "%s refused requests were answered but not stored: their login already had 50 stored within the retention.", "A client keeps trying what it may not: check its scope or its program."},
	{"runs.loops_stopped", Trouble, "%s rules were disabled because they kept firing themselves.", "The Logbook names each rule and why; fix its program before enabling it again."},
	{"runs.firings_refused", Trouble, "%s firings were refused: their login's rules already ran limits.max_live_firings_per_principal (an admin's: limits.max_live_firings_admin) at once.", "A rule fires faster than it finishes: make it shorter, or give it mode single or queued."},

	{"notify.*.sent", Work, "Channel %[2]s sent %[1]s messages.", ""},
	{"notify.*.failed", Trouble, "Channel %[2]s gave up on %[1]s messages after retrying.", "/healthz notify says its last error; check the channel's URL and token."},
	{"notify.*.retried", Work, "Channel %[2]s retried %[1]s times.", ""},
}
