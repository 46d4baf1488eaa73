// zhc.js serialises every zigbee-herdsman-converters definition the way
// Zigbee2MQTT 2.x publishes it in <base>/bridge/devices, and writes the
// library-wide expose-shape statistics plus a compact subset (a few real
// devices that together show every shape). devices/zhc_test.go reads the
// subset and the statistics; TestLibraryFidelity reads the full file.
//
//   mkdir -p /tmp/zhc && cd /tmp/zhc && npm init -y && npm i zigbee-herdsman-converters@26.112.0
//   node devices/testdata/gen/zhc.js /tmp/zhc/node_modules/zigbee-herdsman-converters \
//        /tmp/zhc/devices.json devices/testdata/zhc
//
// How Zigbee2MQTT 2.12 serialises (lib/extension/bridge.ts publishDevices,
// getDefinitionPayload; lib/model/device.ts exposes()): the definition is
// zhc's prepareDefinition(definition); exposes() calls a function-valued
// exposes with the device and its options and appends the linkquality
// numeric; the array is written with json-stable-stringify (keys sorted,
// undefined members left out; the expose classes have no toJSON). Here a
// function-valued exposes is called as zhc itself does without a device
// ({isDummyDevice: true}, {}). Left out to keep the files small: the
// definition's options and the device's endpoints (the catalog reads
// neither).
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const [zhcDir, fullOut, subsetDir] = process.argv.slice(2);
if (!zhcDir || !fullOut || !subsetDir) {
    console.error("usage: node zhc.js <zigbee-herdsman-converters dir> <full devices.json> <subset dir>");
    process.exit(2);
}
const zhc = require(path.resolve(zhcDir, "dist/index.js"));
const definitions = require(path.resolve(zhcDir, "dist/devices/index.js")).default;
const version = require(path.resolve(zhcDir, "package.json")).version;
let exposeErrors = 0;
zhc.setLogger({
    debug: () => {},
    info: () => {},
    warning: () => {},
    error: () => {
        exposeErrors++;
    },
});

// Zigbee2MQTT's LINKQUALITY (lib/model/device.ts).
const linkquality = new zhc.Numeric("linkquality", zhc.access.STATE)
    .withUnit("lqi")
    .withDescription("Link quality (signal strength)")
    .withValueMin(0)
    .withValueMax(255)
    .withCategory("diagnostic");

// stableStringify is json-stable-stringify's output: sorted keys, undefined
// and function members left out, undefined array items as null.
function stableStringify(v) {
    if (v === null || typeof v !== "object") {
        return JSON.stringify(v);
    }
    if (Array.isArray(v)) {
        return "[" + v.map((x) => (x === undefined || typeof x === "function" ? "null" : stableStringify(x))).join(",") + "]";
    }
    const keys = Object.keys(v).sort();
    const out = [];
    for (const k of keys) {
        if (v[k] === undefined || typeof v[k] === "function") continue;
        out.push(JSON.stringify(k) + ":" + stableStringify(v[k]));
    }
    return "{" + out.join(",") + "}";
}

function deviceOf(def, i) {
    const prepared = zhc.prepareDefinition(def);
    const exposes = typeof prepared.exposes === "function" ? prepared.exposes({isDummyDevice: true}, {}) : [...prepared.exposes];
    exposes.push(linkquality);
    const ieee = "0x00124b00" + i.toString(16).padStart(8, "0");
    return {
        definition: {
            description: prepared.description,
            exposes,
            model: prepared.model,
            source: "native",
            supports_ota: !!prepared.ota,
            vendor: prepared.vendor,
            version: prepared.version,
        },
        disabled: false,
        friendly_name: `${prepared.vendor} ${prepared.model}`.replace(/[#+/]/g, "_"),
        ieee_address: ieee,
        interview_completed: true,
        interview_state: "SUCCESSFUL",
        interviewing: false,
        manufacturer: prepared.vendor,
        model_id: (prepared.zigbeeModel && prepared.zigbeeModel[0]) || prepared.model,
        supported: true,
        type: "Router",
    };
}

// --- shape signatures (devices/zhc_test.go shapeSigs computes the same) ---

const specific = new Set(["light", "switch", "lock", "cover", "climate", "fan"]);

function flags(e) {
    const f = [];
    switch (e.type) {
        case "numeric":
            if (e.presets && e.presets.length) {
                const kinds = new Set(e.presets.map((p) => (typeof p.value === "number" ? "num" : "str")));
                f.push("presets:" + [...kinds].sort().join("+"));
                const out = e.presets.some(
                    (p) =>
                        typeof p.value === "number" &&
                        ((e.value_min !== undefined && p.value < e.value_min) || (e.value_max !== undefined && p.value > e.value_max)),
                );
                if (out) f.push("preset_out_of_range");
            }
            if (e.value_step !== undefined) f.push("step");
            break;
        case "binary":
            f.push("on:" + typeof e.value_on);
            if (e.value_toggle !== undefined) f.push("toggle");
            break;
        case "enum":
            if (!e.values || e.values.length === 0) f.push("novalues");
            else if (!e.values.every((v) => typeof v === "string")) f.push("nonstring");
            break;
        case "composite":
            if (!e.features || e.features.length === 0) f.push("nofeatures");
            else if (e.access & 1 && e.features.every((x) => !(x.access & 1))) f.push("features_unpublished");
            break;
        case "list":
            f.push("item:" + (e.item_type ? e.item_type.type : "none"));
            if (e.length_min !== undefined || e.length_max !== undefined) f.push("length");
            break;
    }
    return f;
}

// sigs appends the signature of e and of everything inside it.
function sigs(e, ctx, out) {
    const s = [ctx + e.type, "a" + (e.access || 0), ...flags(e)].join("/");
    out.push(s);
    const inner = ctx === "" ? e.type + ">" : ctx + e.type + ">";
    const depth = ctx.split(">").length - 1;
    const next = depth >= 2 ? ctx : inner; // contexts nest two deep at most
    for (const f of e.features || []) sigs(f, next, out);
    if (e.item_type) sigs(e.item_type, next, out);
}

// keyOf is the key of an expose in the device's state object.
function keyOf(e) {
    return e.property || e.name || "";
}

// dupSigs names properties exposed more than once with different shapes
// (at top level or inside one specific expose, where the catalog routes
// them): a shape is the expose without its texts, named by its outer
// signature.
function dupSigs(exposes) {
    const byKey = new Map(); // key -> shape (the expose without its texts) -> outer signature
    const add = (e) => {
        const k = keyOf(e);
        if (!k) return;
        const s = [];
        sigs(e, "", s);
        const shape = stableStringify({...e, description: undefined, label: undefined, category: undefined, homeassistant: undefined});
        if (!byKey.has(k)) byKey.set(k, new Map());
        byKey.get(k).set(shape, s[0]);
    };
    for (const e of exposes) {
        if (specific.has(e.type)) (e.features || []).forEach(add);
        else add(e);
    }
    const out = [];
    for (const [, shapes] of byKey) {
        if (shapes.size > 1) {
            // Each shape by its outer signature without its context.
            const outer = [...shapes.values()];
            out.push("dup:" + outer.sort().join("+"));
        }
    }
    return out;
}

function deviceSigs(dev) {
    const out = [];
    for (const e of dev.definition.exposes) sigs(e, "", out);
    out.push(...dupSigs(dev.definition.exposes));
    return out;
}

// --- main ---

const devices = [];
const names = new Map();
for (let i = 0; i < definitions.length; i++) {
    const d = JSON.parse(stableStringify(deviceOf(definitions[i], i)));
    const n = names.get(d.friendly_name) || 0;
    names.set(d.friendly_name, n + 1);
    if (n > 0) d.friendly_name += ` (${n + 1})`;
    devices.push(d);
}

const stats = new Map(); // sig -> {exposes, devices, example}
let exposeCount = 0;
const perDevice = devices.map((d) => {
    const all = deviceSigs(d);
    exposeCount += all.filter((s) => !s.startsWith("dup:")).length;
    const uniq = [...new Set(all)];
    for (const s of all) {
        const st = stats.get(s) || {exposes: 0, devices: 0, example: d.definition.model};
        st.exposes++;
        stats.set(s, st);
    }
    for (const s of uniq) stats.get(s).devices++;
    return uniq;
});

// Greedy cover: the device showing the most shapes not yet shown per byte.
const lines = devices.map((d) => stableStringify(d));
const covered = new Set();
const chosen = [];
while (covered.size < stats.size) {
    let best = -1;
    let bestScore = 0;
    for (let i = 0; i < devices.length; i++) {
        const gain = perDevice[i].filter((s) => !covered.has(s)).length;
        if (gain === 0) continue;
        const score = gain / (lines[i].length + 2000);
        if (score > bestScore) {
            best = i;
            bestScore = score;
        }
    }
    chosen.push(best);
    for (const s of perDevice[best]) covered.add(s);
}
chosen.sort((a, b) => a - b);

fs.writeFileSync(fullOut, "[\n" + lines.join(",\n") + "\n]\n");
fs.mkdirSync(subsetDir, {recursive: true});
fs.writeFileSync(path.join(subsetDir, "devices.json"), "[\n" + chosen.map((i) => lines[i]).join(",\n") + "\n]\n");
const sigList = [...stats.keys()].sort();
const statsOut = {
    generator: "devices/testdata/gen/zhc.js",
    zigbee_herdsman_converters: version,
    definitions: definitions.length,
    exposes: exposeCount,
    expose_errors: exposeErrors,
    subset_devices: chosen.length,
    signatures: sigList.map((s) => ({signature: s, ...stats.get(s)})),
};
fs.writeFileSync(path.join(subsetDir, "stats.json"), JSON.stringify(statsOut, null, 1) + "\n");
console.log(`${definitions.length} definitions, ${exposeCount} exposes, ${stats.size} shapes, subset ${chosen.length} devices, ${exposeErrors} expose errors`);
