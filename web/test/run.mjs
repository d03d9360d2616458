// Runs one of the TypeScript test scripts beside this file under Node:
// esbuild bundles it (our code and the generated protobuf code; packages
// stay imports of node_modules), then Node imports the bundle. The
// script's own arguments follow its name:
//
//   node test/run.mjs grpc_web.ts http://127.0.0.1:50051
//
// A script fails by throwing; this exits non-zero with the error.
import { build } from "esbuild";
import { mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [script, ...args] = process.argv.slice(2);
if (!script) {
  console.error("usage: node test/run.mjs SCRIPT.ts [ARGS...]");
  process.exit(2);
}
// Inside the package, so that the bundle's imports find node_modules.
const outdir = join(here, "..", "node_modules", ".cache", "agentd-tests");
await mkdir(outdir, { recursive: true });
const outfile = join(outdir, `${script.replace(/\.ts$/, "")}-${process.pid}.mjs`);
await build({
  entryPoints: [resolve(here, script)],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  logLevel: "warning",
});
process.argv = [process.argv[0], outfile, ...args];
try {
  const { main } = await import(pathToFileURL(outfile).href);
  await main(args);
} catch (error) {
  console.error(error);
  process.exit(1);
}
