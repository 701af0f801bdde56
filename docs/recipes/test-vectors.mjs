// Runs verify-proof.ts (compiled with esbuild) over docs/proof-test-vectors.json: exactly
// `valid` is accepted, and only once. Part of the test command (infra/scripts/recipes.sh).
import { readFileSync, writeFileSync } from "node:fs";
import { transformSync } from "esbuild";

const here = new URL(".", import.meta.url);
const ts = readFileSync(new URL("verify-proof.ts", here), "utf8");
// Compiled next to this file (ignored by git), so `jose` resolves from ./node_modules.
const compiled = new URL(".verify-proof.compiled.mjs", here);
writeFileSync(compiled, transformSync(ts, { loader: "ts", format: "esm" }).code);
const { verifyProof, proofKeysFromJwks, Refused } = await import(compiled.href);

const doc = JSON.parse(readFileSync(new URL("../proof-test-vectors.json", here), "utf8"));
const keys = Object.fromEntries(doc.trustedKeys.map((k) => [k.kid, k.publicKeyPem]));
const seen = new Set();
const consume = async (jti) => (seen.has(jti) ? false : (seen.add(jti), true));
async function run(token, guard, claim) {
  try {
    await verifyProof(token, { keys, issuer: doc.issuer, audience: doc.audience, expected: doc.action, now: doc.now, leeway: doc.leewaySeconds, consume: guard, claim });
    return "accept";
  } catch (e) {
    if (!(e instanceof Refused)) throw e;
    return `reject (${e.message})`;
  }
}
const failures = [];
for (const c of doc.cases) {
  const got = await run(c.token);
  if ((got === "accept") !== (c.expect === "accept")) failures.push(`${c.name}: expected ${c.expect}, got ${got}`);
  console.log(`  ${c.name.padEnd(34)} ${got}`);
}
const valid = doc.cases.find((c) => c.name === "valid").token;
const first = await run(valid, consume);
const second = await run(valid, consume);
if (first !== "accept" || second === "accept") failures.push(`replay: first ${first}, second ${second}`);
console.log(`  ${"replay".padEnd(34)} first ${first}, second ${second}`);
// N-1: an action already executed (claimed) is refused whatever the proof.
const executed = await run(valid, undefined, async () => false);
if (executed !== "reject (already executed)") failures.push(`already executed: got ${executed}`);
const claimed = [];
const fresh = await run(valid, undefined, async (t, a) => (claimed.push([t, a]), true));
if (fresh !== "accept" || JSON.stringify(claimed) !== JSON.stringify([[doc.action.tenantId, doc.action.actionId]])) {
  failures.push(`claim: got ${fresh}, claimed ${JSON.stringify(claimed)}`);
}
console.log(`  ${"already executed".padEnd(34)} ${executed}`);
// V-6: the audit checkpoint key set is never a source of proof keys.
try {
  await proofKeysFromJwks(doc.checkpointKeys);
  failures.push("checkpointKeys: the marked document was accepted as a JWKS");
} catch (e) {
  if (!(e instanceof Refused)) throw e;
}
if (Object.keys(await proofKeysFromJwks({ keys: doc.checkpointKeys.keys })).length) {
  failures.push("checkpointKeys: a marked key was taken as a proof key");
}
console.log(`  ${"checkpoint key set".padEnd(34)} refused`);
if (failures.length) {
  console.error("TypeScript recipe disagrees with the vectors:\n" + failures.join("\n"));
  process.exit(1);
}
console.log(`TypeScript recipe: ${doc.cases.length} vectors and the replay as expected`);
