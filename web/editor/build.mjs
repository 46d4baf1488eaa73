// Bundles src/editor.js and CodeMirror into one minified file that the
// Go binary embeds (web/static/editor.js): no CDN, loaded only by the
// editor page. Run `npm ci && npm run build` after changing src/.
import { build } from "esbuild";
import { statSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";

const out = new URL("../static/editor.js", import.meta.url).pathname;
await build({
  entryPoints: [new URL("src/editor.js", import.meta.url).pathname],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  legalComments: "eof",
  outfile: out,
});
const size = statSync(out).size, gz = gzipSync(readFileSync(out)).length;
console.log(`web/static/editor.js: ${size} bytes, ${gz} gzipped`);
