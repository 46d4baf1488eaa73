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

// busy marks the results as out of date while an answer is awaited.
function busy(on) { results.setAttribute("aria-busy", on ? "true" : "false"); }

async function ask(op) {
  const body = new URLSearchParams(new FormData(form));
  body.set("op", op);
  const n = ++seq;
  busy(true);
  say(op === "test" ? "Test running…" : "Validating…");
  let res;
  try {
    res = await fetch(form.action, { method: "POST", body, headers: { Accept: "application/json" }, credentials: "same-origin" });
  } catch (e) {
    if (n === seq) { say("The server did not answer: " + e.message); busy(false); }
    return;
  }
  if (n !== seq) return; // a newer request is under way
  if (!res.ok && !(res.headers.get("Content-Type") || "").includes("json")) {
    say("The server refused (" + res.status + "). Reload the page and try again.");
    busy(false);
    return;
  }
  const out = await res.json();
  if (n !== seq) return;
  results.innerHTML = out.panel;
  busy(false);
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
}

// jump moves the cursor to a pointer's value and focuses the editor.
function jump(pointer) {
  const text = view.state.doc.toString(), r = rangeOf(text, locate(text), pointer, null);
  view.focus(); // first: focusing reads the page's selection into the editor
  view.dispatch({ selection: { anchor: r.from, head: r.to }, scrollIntoView: true });
}

// A listed diagnostic's link moves the cursor to its place. Enter is
// taken on keydown (its default prevented), so the key does not go on to
// type a newline over the selection once the editor has the focus.
function follow(e) {
  const a = e.target.closest && e.target.closest("[data-path]");
  if (!a || (e.type === "keydown" && e.key !== "Enter")) return;
  e.preventDefault();
  jump(a.getAttribute("data-path"));
}

function changed() {
  seq++; // an answer about the text before this change would be misplaced
  busy(true);
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
  results.addEventListener("click", follow);
  results.addEventListener("keydown", follow);
  const keys = document.getElementById("ed-keys");
  if (keys) keys.hidden = false;
  // A deploy's answer (approval pending, a refusal) stays until the text
  // changes: validating at once would replace it with "Valid" within a
  // second, and a risky deploy would look as if nothing had happened.
  if (!results.querySelector("#ed-approval, #ed-error")) ask("validate");
}

if (form && area && results) mount();
