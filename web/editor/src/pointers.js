// JSON text → the text range of every value by its JSON Pointer, so a
// diagnostic's path (RFC 6901) can be shown where it is. A syntax error
// gives the offset where parsing stopped instead.

export function locate(text) {
  const ranges = new Map(); // pointer → {from, to, keyFrom}
  let i = 0;
  const fail = (msg) => { const e = new Error(msg); e.at = Math.min(i, text.length); throw e; };
  const ws = () => { while (i < text.length && " \t\r\n".includes(text[i])) i++; };
  const esc = (k) => k.replace(/~/g, "~0").replace(/\//g, "~1");
  function str() {
    const start = i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === "\\") i++;
      else if (text[i] === "\n") fail("unterminated string");
      i++;
    }
    if (i >= text.length) fail("unterminated string");
    i++;
    return JSON.parse(text.slice(start, i));
  }
  function value(ptr, keyFrom) {
    ws();
    const from = i, c = text[i];
    if (c === "{") {
      i++; ws();
      if (text[i] === "}") i++;
      else for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a member name in quotes");
        const kf = i, k = str();
        ws();
        if (text[i] !== ":") fail("expected ':' after the member name");
        i++;
        value(ptr + "/" + esc(k), kf);
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") { i++; break; }
        fail("expected ',' or '}'");
      }
    } else if (c === "[") {
      i++; ws();
      if (text[i] === "]") i++;
      else for (let n = 0; ; n++) {
        value(ptr + "/" + n, -1);
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") { i++; break; }
        fail("expected ',' or ']'");
      }
    } else if (c === '"') {
      str();
    } else {
      const m = /^(-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null)/.exec(text.slice(i, i + 64));
      if (!m) fail("expected a JSON value");
      i += m[0].length;
    }
    ranges.set(ptr, { from, to: i, keyFrom: keyFrom >= 0 ? keyFrom : from });
  }
  try {
    value("", -1);
    ws();
    if (i < text.length) fail("unexpected text after the program");
  } catch (e) {
    if (e.at === undefined) throw e;
    return { ranges, error: { at: e.at, message: e.message } };
  }
  return { ranges, error: null };
}

// rangeOf is where a diagnostic at pointer belongs: its value, or for a
// member that is missing the nearest enclosing value that exists (its
// first line only, so a whole program is not underlined). A range inside
// a string value (line/column counted in the string) narrows it.
export function rangeOf(text, loc, pointer, inner) {
  let p = pointer || "";
  while (!loc.ranges.has(p) && p !== "") p = p.slice(0, p.lastIndexOf("/"));
  const r = loc.ranges.get(p);
  if (!r) return { from: 0, to: Math.min(text.length, 1) };
  if (p !== pointer) {
    const nl = text.indexOf("\n", r.keyFrom);
    return { from: r.keyFrom, to: nl < 0 || nl > r.to ? r.to : Math.max(nl, r.keyFrom + 1) };
  }
  if (inner && text[r.from] === '"') {
    const raw = text.slice(r.from + 1, r.to - 1);
    if (!raw.includes("\\") && !raw.includes("\n")) {
      const a = r.from + 1 + Math.max(0, inner.start.column - 1), b = r.from + 1 + Math.max(0, inner.end.column - 1);
      if (inner.start.line <= 1 && a < r.to && b <= r.to - 1 && b >= a) return { from: a, to: Math.max(b, a + 1) };
    }
  }
  return { from: r.from, to: r.to };
}
