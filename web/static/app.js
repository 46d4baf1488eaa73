// Pilothouse web UI: confirmations and live updates over server-sent events.
// Pages work without it; it only applies /events to what is on screen.
(function () {
  "use strict";

  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  });
  // A slider shows its value as it moves.
  document.addEventListener("input", function (e) {
    var out = e.target.getAttribute && e.target.getAttribute("data-out");
    if (out && document.getElementById(out)) document.getElementById(out).textContent = e.target.value;
  });
  // The new-helper form shows the fields its kind takes (all without script).
  var helperKind = document.getElementById("h-kind");
  function helperFields() {
    document.querySelectorAll(".helper-form [data-kinds]").forEach(function (f) {
      f.hidden = f.getAttribute("data-kinds").split(" ").indexOf(helperKind.value) < 0;
    });
  }
  if (helperKind) { helperKind.addEventListener("change", helperFields); helperFields(); }
  // Filters apply as soon as a choice changes.
  document.querySelectorAll("form.find select").forEach(function (s) {
    s.addEventListener("change", function () { s.form.submit(); });
  });

  // Times: lists show them relative to now ("3 min ago"), the local time
  // with its zone stays in the tooltip; refreshed every 30 s.
  function relText(iso) {
    var d = (Date.parse(iso) - Date.now()) / 1000, a = Math.abs(d), n, u;
    if (isNaN(d)) return null;
    if (a < 45) return d < 0 ? "just now" : "in under a minute";
    if (a < 3600) { n = Math.round(a / 60); u = "min"; }
    else if (a < 86400) { n = Math.round(a / 3600); u = "h"; }
    else if (a < 7 * 86400) { n = Math.round(a / 86400); u = n === 1 ? "day" : "days"; }
    else return null; // older: the date says more
    return d < 0 ? n + " " + u + " ago" : "in " + n + " " + u;
  }
  function relTimes() {
    document.querySelectorAll("time[data-rel]").forEach(function (t) {
      if (!t.hasAttribute("data-abs")) t.setAttribute("data-abs", t.textContent);
      var r = relText(t.getAttribute("datetime"));
      var txt = r || t.getAttribute("data-abs");
      if (t.textContent !== txt) t.textContent = txt;
    });
  }
  relTimes();
  setInterval(relTimes, 30000);

  // The status indicator: "live" only while the event stream is open AND
  // the broker and storage are fine (polled from /status every 5 s); a
  // banner under the header says what is wrong.
  var conn = document.getElementById("conn"), trouble = document.getElementById("trouble");
  var live = document.body.getAttribute("data-live");
  var state = { sse: live && window.EventSource ? "connecting" : "", server: true,
    health: conn ? { ok: conn.getAttribute("data-ok") === "true", label: conn.getAttribute("data-label"), title: conn.title,
      problem: trouble ? trouble.textContent : "" } : null };
  function paint() {
    if (!conn) return;
    var h = state.health || { ok: true, label: "connected", title: "" }, text, cls, title = h.title;
    if (!state.server) { text = "server unreachable"; cls = "off"; title = "Pilothouse does not answer"; }
    else if (!h.ok) { text = h.label; cls = "off"; }
    else if (state.sse === "open") { text = "live"; cls = "on"; title += " · live updates on"; }
    else if (state.sse === "connecting") { text = "connecting"; cls = ""; }
    else if (state.sse === "error") { text = "reconnecting"; cls = "off"; title += " · live updates reconnecting"; }
    else { text = h.label; cls = "on"; }
    if (conn.textContent !== text) conn.textContent = text;
    conn.className = "conn" + (cls ? " " + cls : "");
    conn.title = title;
    if (trouble) {
      var p = state.server ? (h.problem || "") : "Pilothouse does not answer: what this page shows may be out of date.";
      if (trouble.textContent !== p) trouble.textContent = p;
      trouble.hidden = !p;
    }
  }
  function poll() {
    if (!conn || document.hidden) return;
    fetch("/status", { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (h) { state.server = true; if (h) state.health = h; paint(); },
        function () { state.server = false; paint(); });
  }
  setInterval(poll, 5000);
  document.addEventListener("visibilitychange", poll);
  paint();

  if (!live || !window.EventSource) return;

  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    for (var k in attrs) n.setAttribute(k, attrs[k]);
    if (text !== undefined) n.textContent = text;
    return n;
  }
  function byData(attr, value) {
    var out = [];
    document.querySelectorAll("[" + attr + "]").forEach(function (n) {
      if (n.getAttribute(attr) === value) out.push(n);
    });
    return out;
  }
  function badge(text, cls) { return el("span", { "class": "badge " + cls }, text); }
  function runLink(ev) { return el("a", { href: "/runs/" + encodeURIComponent(ev.run_id), "class": "mono" }, ev.run_id); }
  function timeEl(ev) {
    var t = el("time", { datetime: ev.time, title: ev.when, "data-rel": "" }, ev.when);
    setTimeout(relTimes, 0);
    return t;
  }
  function notice(text) {
    var n = document.getElementById("notice");
    if (!n) return;
    n.textContent = text + " ";
    var b = el("button", { type: "button" }, "Reload");
    b.addEventListener("click", function () { location.reload(); });
    n.appendChild(b);
    n.hidden = false;
  }
  function cell(label, child) {
    var td = el("td", { "data-label": label });
    td.appendChild(child);
    return td;
  }
  function prependRow(tbody, cells) {
    var tr = el("tr", { "class": "fresh" });
    cells.forEach(function (c) { tr.appendChild(c); });
    tbody.insertBefore(tr, tbody.firstChild);
    var max = 200;
    while (tbody.rows.length > max) tbody.deleteRow(tbody.rows.length - 1);
  }

  var onFiring = {
    rules: function (ev) {
      var rows = byData("data-rule", ev.rule).filter(function (n) { return n.tagName === "TR"; });
      if (!rows.length) { notice("Rule " + ev.rule + " fired and is not listed yet."); return; }
      rows.forEach(function (tr) {
        var td = tr.querySelector('[data-cell="last"]');
        if (!td) return;
        td.textContent = "";
        var a = el("a", { href: "/runs/" + encodeURIComponent(ev.run_id) });
        a.appendChild(timeEl(ev));
        td.appendChild(a);
        td.appendChild(document.createTextNode(" "));
        td.appendChild(badge(ev.text, ev.class));
        tr.classList.remove("fresh"); void tr.offsetWidth; tr.classList.add("fresh");
      });
    },
    rule: function (ev, name) {
      if (ev.rule !== name) return;
      var t = document.getElementById("activity");
      if (!t) return;
      var none = document.getElementById("no-activity");
      if (none) none.hidden = true;
      prependRow(t.tBodies[0], [cell("When", timeEl(ev)), cell("Outcome", badge(ev.text, ev.class)), cell("Run", runLink(ev))]);
    },
    runs: function (ev) {
      var t = document.getElementById("runs");
      if (!t) return;
      var kind = t.getAttribute("data-kind"), rule = t.getAttribute("data-rule"), oc = t.getAttribute("data-outcome");
      if (kind && kind !== "firing") return;
      if (rule && rule !== ev.rule) return;
      if (oc === "ok" && !ev.ok) return;
      if (oc === "failed" && ev.ok) return;
      if (oc && oc !== "ok" && oc !== "failed" && oc !== ev.status) return;
      var r = el("a", { href: "/rules/" + encodeURIComponent(ev.rule) }, ev.rule), empty = document.getElementById("empty");
      if (empty) empty.hidden = true;
      var cells = [cell("When", timeEl(ev)), cell("Kind", document.createTextNode("firing")), cell("Rule", r)];
      if (t.hasAttribute("data-who")) cells.push(cell("By", document.createTextNode(ev.principal || "")));
      prependRow(t.tBodies[0], cells.concat([cell("Outcome", badge(ev.text, ev.class)), cell("Run", runLink(ev))]));
    }
  };

  function onRule(ev, page, name) {
    if (page === "rules") {
      var rows = byData("data-rule", ev.rule);
      if (!rows.length && ev.status !== "removed") notice("Rule " + ev.rule + " is now " + ev.status + ".");
      rows.forEach(function (tr) {
        var b = tr.querySelector("[data-status]"), next = tr.querySelector('[data-cell="next"]');
        if (b) { b.textContent = ev.status; b.className = "badge " + ev.class; }
        // What comes next is the server's to say: disabled is certain.
        if (next) { next.textContent = ""; next.appendChild(el("span", { "class": "sub" }, ev.status === "disabled" ? "disabled" : "reload to see")); }
      });
    } else if (page === "rule" && ev.rule === name) {
      var b = document.getElementById("rule-status");
      if (b) { b.textContent = ev.status; b.className = "badge " + ev.class; }
      notice("This rule is now " + ev.status + ".");
    }
  }

  function onLive(ev) {
    if (ev.value !== undefined) {
      byData("data-live", ev.id).forEach(function (td) {
        // An offline device's values stay as they were: rules read none of what it sends meanwhile.
        if (td.hasAttribute("data-stale")) return;
        td.textContent = ev.value;
        td.title = "updated " + ev.when;
        td.classList.remove("flash-live"); void td.offsetWidth; td.classList.add("flash-live");
      });
    }
    if (ev.available !== undefined) {
      byData("data-avail", ev.id).forEach(function (b) {
        b.textContent = ev.available ? "online" : "offline";
        b.className = "badge " + (ev.available ? "st-ok" : "st-bad");
      });
      byData("data-dev", ev.id).forEach(function (td) {
        if (ev.available) { td.removeAttribute("data-stale"); td.classList.remove("stale"); }
        else { td.setAttribute("data-stale", ""); td.classList.add("stale"); }
      });
      byData("data-stale-note", ev.id).forEach(function (p) {
        p.textContent = ev.available ? "" : "Offline since " + ev.when + "; rules read no value. Shown: the last values seen before it went offline.";
        p.hidden = !!ev.available;
      });
    }
  }

  var page = live, name = "";
  if (live.indexOf("rule:") === 0) { page = "rule"; name = live.slice(5); }
  var src = page === "devices" ? "/events?devices=1" : page === "runs" ? "/events" : "/events?deploys=1";
  // A page with a logbook list gets its entries (logbook.js shows them).
  if (document.getElementById("logbook")) src += (src.indexOf("?") < 0 ? "?" : "&") + "logbook=1";
  var es = new EventSource(src);
  function parse(m) { try { return JSON.parse(m.data); } catch (e) { return null; } }
  es.onopen = function () { state.sse = "open"; paint(); poll(); };
  es.onerror = function () { state.sse = "error"; paint(); poll(); };
  es.addEventListener("firing", function (m) {
    var ev = parse(m);
    if (ev && onFiring[page]) onFiring[page](ev, name);
  });
  es.addEventListener("rule", function (m) { var ev = parse(m); if (ev) onRule(ev, page, name); });
  es.addEventListener("live", function (m) { var ev = parse(m); if (ev && page === "devices") onLive(ev); });
  es.addEventListener("logbook", function (m) {
    var ev = parse(m);
    if (ev) document.dispatchEvent(new CustomEvent("pilothouse:logbook", { detail: ev }));
  });
  es.addEventListener("deploy", function (m) {
    var ev = parse(m);
    if (!ev || !ev.ok || !ev.rule) return;
    if (page === "rules") notice("Rule " + ev.rule + " was installed.");
    else if (page === "rule" && ev.rule === name) notice("A new version of this rule was installed.");
  });
  es.addEventListener("catalog", function () { if (page === "devices") notice("The device catalog changed."); });
  window.addEventListener("pagehide", function () { es.close(); });
})();
