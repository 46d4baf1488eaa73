// The rule editor: CodeMirror 6 over the page's program textarea. The
// page works without this file (a plain form); with it, the program is
// validated as you type, diagnostics sit at their JSON Pointer, and
// Validate / Test run answer in place. Deploy stays a form submission.
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter, drawSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { syntaxHighlighting, HighlightStyle, bracketMatching, indentOnInput } from "@codemirror/language";
import { tags } from "@lezer/highlight";
import { json } from "@codemirror/lang-json";
import { setDiagnostics, lintGutter, lintKeymap } from "@codemirror/lint";
import { locate, rangeOf } from "./pointers.js";

const form = document.getElementById("editor-form");
const area = document.getElementById("program");
const results = document.getElementById("ed-results");
const status = document.getElementById("ed-status");
let view, timer, seq = 0, last = [];

// JSON colours from the page's stylesheet (editor.css), so they follow its
// light and dark schemes.
const jsonColours = HighlightStyle.define([
  { tag: tags.propertyName, color: "var(--hl-key)" },
  { tag: tags.string, color: "var(--hl-string)" },
  { tag: tags.number, color: "var(--hl-number)" },
  { tag: [tags.bool, tags.null], color: "var(--hl-atom)" },
  { tag: [tags.brace, tags.squareBracket, tags.separator], color: "var(--muted)" },
]);

function say(text) { if (status) status.textContent = text; }

async function ask(op) {
  const body = new URLSearchParams(new FormData(form));
  body.set("op", op);
  const n = ++seq;
  say(op === "test" ? "Test running…" : "Validating…");
  let res;
  try {
    res = await fetch(form.action, { method: "POST", body, headers: { Accept: "application/json" }, credentials: "same-origin" });
  } catch (e) {
    if (n === seq) say("The server did not answer: " + e.message);
    return;
  }
  if (n !== seq) return; // a newer request is under way
  if (!res.ok && !(res.headers.get("Content-Type") || "").includes("json")) {
    say("The server refused (" + res.status + "). Reload the page and try again.");
    return;
  }
  const out = await res.json();
  results.innerHTML = out.panel;
  last = out.diagnostics || [];
  show(last);
  say(out.summary || "");
}

// show puts the server's diagnostics into the editor at their pointers,
// plus the syntax error where the text stops being JSON.
function show(diags) {
  const text = view.state.doc.toString(), loc = locate(text), marks = [];
  for (const d of diags) {
    const r = loc.error && !d.path ? { from: loc.error.at, to: Math.min(loc.error.at + 1, text.length) } : rangeOf(text, loc, d.path, d.range);
    marks.push({ from: r.from, to: Math.max(r.to, r.from), severity: d.severity === "error" ? "error" : d.severity === "warning" ? "warning" : "info",
      message: (d.path ? d.path + ": " : "") + d.message + (d.hint ? " (" + d.hint + ")" : ""), source: d.code });
  }
  if (loc.error && !diags.some((d) => !d.path)) {
    marks.push({ from: loc.error.at, to: Math.min(loc.error.at + 1, text.length), severity: "error", message: "not JSON: " + loc.error.message });
  }
  view.dispatch(setDiagnostics(view.state, marks));
  results.querySelectorAll("[data-path]").forEach((b) => {
    b.addEventListener("click", (e) => { e.preventDefault(); jump(b.getAttribute("data-path")); });
  });
}

// jump moves the cursor to a pointer's value and focuses the editor.
function jump(pointer) {
  const text = view.state.doc.toString(), r = rangeOf(text, locate(text), pointer, null);
  view.dispatch({ selection: { anchor: r.from, head: r.to }, scrollIntoView: true });
  // After the key that followed the link is done, or it lands in the text.
  setTimeout(() => view.focus(), 0);
}

function changed() {
  seq++; // an answer about the text before this change would be misplaced
  area.value = view.state.doc.toString();
  clearTimeout(timer);
  timer = setTimeout(() => ask("validate"), 500);
}

function mount() {
  const host = document.createElement("div");
  host.id = "program-editor";
  host.className = "cm-host";
  area.after(host);
  area.hidden = true;
  const label = document.querySelector('label[for="program"]');
  view = new EditorView({
    parent: host,
    state: EditorState.create({
      doc: area.value,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), highlightActiveLine(), drawSelection(), history(),
        indentOnInput(), bracketMatching(), syntaxHighlighting(jsonColours),
        json(), lintGutter(), EditorView.lineWrapping,
        EditorView.cspNonce.of(form.getAttribute("data-nonce") || ""),
        keymap.of([
          { key: "Mod-Enter", run: () => { ask("test"); return true; } },
          { key: "Mod-s", run: () => { ask("validate"); return true; } },
          ...defaultKeymap, ...historyKeymap, ...lintKeymap,
        ]),
        EditorView.contentAttributes.of({ "aria-label": "Program (JSON)", "aria-describedby": "ed-keys" }),
        EditorView.updateListener.of((u) => { if (u.docChanged) changed(); }),
      ],
    }),
  });
  host.pilotView = view; // for the browser tests
  if (label) label.addEventListener("click", () => view.focus());
  form.addEventListener("click", (e) => {
    const b = e.target.closest("button[name=op]");
    if (!b || b.value === "deploy") { area.value = view.state.doc.toString(); return; }
    e.preventDefault();
    ask(b.value);
  });
  form.addEventListener("submit", () => { area.value = view.state.doc.toString(); });
  const keys = document.getElementById("ed-keys");
  if (keys) keys.hidden = false;
  ask("validate");
}

if (form && area && results) mount();
