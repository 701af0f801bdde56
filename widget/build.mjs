// Builds the widget from its one source (src/widget.js): an ES module and a classic
// script (global `CountersignWidget`), both minified with esbuild (a build-time tool
// only: the SDK has no runtime dependency), into dist/<version>/. Earlier versions'
// directories are never written: each published version stays served as it was (S-5).
// Prints each file's size, gzipped size and Subresource Integrity hash. `--check` fails
// when dist/<version>/ is not what the source builds.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { transform } from "esbuild";

const here = new URL(".", import.meta.url);
const source = readFileSync(new URL("src/widget.js", here), "utf8");
const version = JSON.parse(readFileSync(new URL("package.json", here), "utf8")).version;
if (!source.includes(`export const VERSION = "${version}";`)) {
  throw new Error(`src/widget.js VERSION must equal package.json version ${version}`);
}
const banner = `/*! Countersign widget ${version} | Apache-2.0 */`;
const common = { minify: true, target: "es2020", banner, legalComments: "none" };
const outputs = {
  "countersign-widget.min.mjs": (await transform(source, { ...common, format: "esm" })).code,
  "countersign-widget.min.js": (await transform(source, { ...common, format: "iife", globalName: "CountersignWidget" })).code,
};
const check = process.argv.includes("--check");
const pkg = JSON.parse(readFileSync(new URL("package.json", here), "utf8"));
if (pkg.module !== `./dist/${version}/countersign-widget.min.mjs`) {
  throw new Error(`package.json must point at dist/${version}/`);
}
const dir = `dist/${version}/`;
mkdirSync(new URL(dir, here), { recursive: true });
let stale = [];
for (const [name, code] of Object.entries(outputs)) {
  const path = new URL(`${dir}${name}`, here);
  if (check) {
    let current = "";
    try { current = readFileSync(path, "utf8"); } catch (_) {}
    if (current !== code) stale.push(name);
  } else {
    writeFileSync(path, code);
  }
  const sri = "sha384-" + createHash("sha384").update(code).digest("base64");
  console.log(`${name}: ${code.length} bytes, ${gzipSync(code, { level: 9 }).length} gzipped, integrity ${sri}`);
}
// The README publishes each file's integrity (a Rust test holds it): kept in step here.
if (!check) {
  const readmePath = new URL("../README.md", here);
  let readme = readFileSync(readmePath, "utf8");
  for (const [name, code] of Object.entries(outputs)) {
    const sri = "sha384-" + createHash("sha384").update(code).digest("base64");
    const row = new RegExp("(`/widget/" + version.replace(/\./g, "\\.") + "/" + name.replace(/\./g, "\\.") + "`[^|]*\\| `)sha384-[A-Za-z0-9+/=]+", "g");
    readme = readme.replace(row, `$1${sri}`);
    // The embedding example shows the current version.
    if (name.endsWith(".js")) {
      readme = readme.replace(/(<script src="https:\/\/<API>\/widget\/)[0-9.]+(\/countersign-widget\.min\.js"\n\s+integrity=")sha384-[A-Za-z0-9+/=]+(" crossorigin)/g, `$1${version}$2${sri}$3`);
    }
  }
  writeFileSync(readmePath, readme);
}
if (stale.length) {
  console.error(`widget/${dir} is stale (${stale.join(", ")}): run \`npm run build\` in widget/ and commit`);
  process.exit(1);
}
