package mcpserver

// Input and output schemas of the tools. Output schemas admit the error
// shape too (the TypeScript client validates structuredContent on isError).

const errorProp = `"error":{"type":"object","description":"present only on a request error (isError: true)","required":["kind","message"],"properties":{"kind":{"type":"string","enum":["invalid_request","not_found","unsupported","conflict","unknown_baseline","resource_exhausted"]},"message":{"type":"string"},"catalog_version":{"type":"string"}}}`

// withError turns the success shape's properties into an output schema that
// also admits the error shape: no member is required, and "error" is one of
// the properties (a plain object schema every client can represent).
func withError(okProps string) string {
	return `{"type":"object","properties":{` + okProps + `,` + errorProp + `}}`
}

const languageProp = `"language":{"type":"string","enum":["automation/1"],"description":"Language id from the manifest"}`

var (
	discoverIn  = `{"type":"object","properties":{},"additionalProperties":false}`
	discoverOut = withError(`"pilotage":{"type":"string"},"languages":{"type":"array"}`)

	learnIn  = `{"type":"object","required":["language"],"properties":{` + languageProp + `,"id":{"type":"string","description":"guide id; omit for the index"},"topic":{"type":"string","description":"topic id inside the guide (guides.topic_fetch)"}},"additionalProperties":false}`
	learnOut = withError(`"guides":{"type":"array"},"id":{"type":"string"},"body":{"type":"string"}`)

	lookupIn = `{"type":"object","required":["language","verb"],"properties":{` + languageProp + `,
"verb":{"type":"string","enum":["list","get","changed_since"]},
"kind":{"type":"string","enum":["device","state","event","action","automation"]},
"tag":{"type":"string","description":"exact tag, e.g. type:light, area:kitchen, source:zigbee2mqtt"},
"q":{"type":"string","description":"free text over id, name, description and tags"},
"cursor":{"type":"string","description":"next_cursor of the previous page (list, changed_since)"},"limit":{"type":"integer","minimum":1,"maximum":500,"description":"page size: list 50 by default, changed_since 500"},
"id":{"type":"string","description":"entry id (get)"},
"catalog_version":{"type":"string","description":"baseline token (changed_since)"},
"history":{"type":"object","description":"get of a state entry: also return its recorded changes (history beside the entry, like live): count, per-value counts, the value at the start, and the changes (or buckets when there are more than limit; numbers always as buckets with min/max/mean)","properties":{"since":{"type":"string","description":"ISO 8601 duration back from now (PT12H), RFC 3339 time, or local time in the server's time zone (2026-03-01T22:00); default PT24H"},"until":{"type":"string","description":"same forms; default now"},"limit":{"type":"integer","minimum":1,"maximum":500,"description":"changes (else buckets) returned; default 100"}},"additionalProperties":false}},"additionalProperties":false}`
	lookupOut = withError(`"catalog_version":{"type":"string"},"items":{"type":"array"},"next_cursor":{"type":"string"},"entry":{"type":"object"},"live":{"type":"object"},"changes":{"type":"array"},"history":{"type":"object"}`)

	validateIn  = `{"type":"object","required":["language","program"],"properties":{` + languageProp + `,"program":{"type":"object","description":"an automation/1 program (see the core guide)"},"context":{"description":"automation/1 declares no context_schema: any context is reported as context_binding"}},"additionalProperties":false}`
	validateOut = withError(`"valid":{"type":"boolean"},"diagnostics":{"type":"array"},"catalog_version":{"type":"string"},"plan":{"type":"object"}`)

	executeIn = `{"type":"object","required":["language"],"properties":{` + languageProp + `,
"program":{"type":"object","description":"inline program (exactly one of program and program_ref)"},
"program_ref":{"type":"string","description":"a promoted program's reference (an automation entry id)"},
"input":{"type":"object","description":"the params object (a catalog param takes a catalog id, bound and checked here); with test_run, the reserved member scenario describes the simulation; for a deploy, the reserved member install {rule?, replace?} names the rule to install and allows replacing an installed one (closed-sets guide)"},
"context":{},
"trace_level":{"type":"string","enum":["none","summary","full"]},
"store":{"type":"boolean"},
"expected_catalog_version":{"type":"string"},
"idempotency_key":{"type":"string"},
"test_run":{"type":"boolean","description":"simulate the body with no side effect instead of installing"}},"additionalProperties":false}`
	executeOut = withError(`"run_id":{"type":"string"},"outcome":{"type":"object","required":["ok","status"],"properties":{"ok":{"type":"boolean"},"status":{"type":"string"},"error":{"type":"string"}}},"output":{},"trace":{"type":"object"},"diagnostics":{"type":"array"},"catalog_version":{"type":"string"}`)

	traceIn  = `{"type":"object","required":["run_id"],"properties":{` + languageProp + `,"run_id":{"type":"string"},"trace_level":{"type":"string","enum":["summary","full"]},"question":{"type":"string"}},"additionalProperties":false}`
	traceOut = withError(`"run_id":{"type":"string"},"outcome":{"type":"object"},"output":{},"trace":{"type":"object"},"narration":{"type":"string"}`)

	rulesListIn  = `{"type":"object","properties":{"last_firings":{"type":"integer","minimum":0,"maximum":50,"description":"how many recent firings per rule (default 5)"}},"additionalProperties":false}`
	rulesListOut = withError(`"rules":{"type":"array"}`)
	ruleNameIn   = `{"type":"object","required":["name"],"properties":{"name":{"type":"string","description":"the rule's name (the program's name)"}},"additionalProperties":false}`
	ruleOut      = withError(`"rule":{"type":"object"},"removed":{"type":"string"}`)
)
