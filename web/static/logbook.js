// Pilothouse logbook lists: entries from the live stream (app.js relays
// them) are prepended when they match the list's filters. The list works
// without it; only the newest page of a list takes live entries.
(function () {
  "use strict";
  var box = document.getElementById("logbook");
  if (!box || !box.hasAttribute("data-log-live")) return;
  var table = document.getElementById("log-table"), empty = document.getElementById("log-empty");
  var want = {};
  ["kind", "device", "area", "rule"].forEach(function (k) { want[k] = box.getAttribute("data-log-" + k) || ""; });

  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    for (var k in attrs) n.setAttribute(k, attrs[k]);
    if (text !== undefined) n.textContent = text;
    return n;
  }
  function link(href, text, cls) {
    var a = el("a", { href: href }, text);
    if (cls) a.className = cls;
    return a;
  }
  function matches(ev) {
    for (var k in want) if (want[k] && (ev[k] || "") !== want[k]) return false;
    return true;
  }
  document.addEventListener("pilothouse:logbook", function (e) {
    var ev = e.detail;
    if (!ev || !matches(ev) || !table) return;
    var tr = el("tr", { "class": "fresh" });
    var when = el("td", { "data-label": "When" });
    when.appendChild(el("time", { datetime: ev.time, title: ev.full }, ev.when));
    var what = el("td", { "data-label": "What" });
    what.appendChild(el("span", { "class": "badge " + ev["class"] }, ev.kind));
    var text = el("td", { "data-label": "Entry" }, ev.text);
    if (ev.device) { text.appendChild(document.createTextNode(" · ")); text.appendChild(link("/devices/" + encodeURIComponent(ev.device), ev.device)); }
    if (ev.rule) { text.appendChild(document.createTextNode(" · ")); text.appendChild(link("/rules/" + encodeURIComponent(ev.rule), ev.rule)); }
    if (ev.run_id) { text.appendChild(document.createTextNode(" · ")); text.appendChild(link("/runs/" + encodeURIComponent(ev.run_id), ev.run_id, "mono")); }
    tr.appendChild(when); tr.appendChild(what); tr.appendChild(text);
    var body = table.tBodies[0];
    body.insertBefore(tr, body.firstChild);
    while (body.rows.length > 200) body.deleteRow(body.rows.length - 1);
    table.hidden = false;
    if (empty) empty.hidden = true;
  });
})();
