// Runs summary-check.ts (compiled with esbuild) over docs/summary-test-vectors.json: it must
// accept exactly the texts the platform accepts. Part of the test command (infra/scripts/recipes.sh).
import { readFileSync, writeFileSync } from "node:fs";
import { transformSync } from "esbuild";

const here = new URL(".", import.meta.url);
const compiled = new URL(".summary-check.compiled.mjs", here);
writeFileSync(compiled, transformSync(readFileSync(new URL("summary-check.ts", here), "utf8"), { loader: "ts", format: "esm" }).code);
const { summaryProblems } = await import(compiled.href);
const doc = JSON.parse(readFileSync(new URL("../summary-test-vectors.json", here), "utf8"));
const failures = [];
for (const c of doc.cases) {
  const problems = summaryProblems(c.text);
  const got = problems.length ? "reject" : "accept";
  if (got !== c.expect) failures.push(`${c.name}: platform ${c.expect} ${JSON.stringify(c.rules)}, recipe ${got} ${JSON.stringify(problems)}`);
}
if (failures.length) {
  console.error("TypeScript summary check disagrees with the platform:\n" + failures.join("\n"));
  process.exit(1);
}
console.log(`TypeScript summary check: ${doc.cases.length} vectors as the platform decides`);
