// Builds the inbox into dist/: index.html, inbox.js (src/main.ts and what
// it imports, bundled and minified) and inbox.css. The server embeds these
// three files, so the output is committed; CI rebuilds it and fails when
// it differs from what is committed.
import { build } from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";

await mkdir("dist", { recursive: true });
await build({
  entryPoints: ["src/main.ts"],
  outfile: "dist/inbox.js",
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome110", "firefox115", "safari16"],
  legalComments: "none",
  logLevel: "warning",
});
await build({
  entryPoints: ["src/style.css"],
  outfile: "dist/inbox.css",
  bundle: true,
  minify: true,
  logLevel: "warning",
});
await copyFile("src/index.html", "dist/index.html");
