// Runs verify-proof.ts (compiled with esbuild) over docs/stepup-test-vectors.json (F-5):
// exactly the cases marked accept are accepted; without step-up settings a step-up proof is
// refused. Part of the test command (infra/scripts/recipes.sh).
import { readFileSync, writeFileSync } from "node:fs";
import { transformSync } from "esbuild";

const here = new URL(".", import.meta.url);
const ts = readFileSync(new URL("verify-proof.ts", here), "utf8");
const compiled = new URL(".verify-proof.stepup.compiled.mjs", here);
writeFileSync(compiled, transformSync(ts, { loader: "ts", format: "esm" }).code);
const { verifyProof, Refused } = await import(compiled.href);

const doc = JSON.parse(readFileSync(new URL("../stepup-test-vectors.json", here), "utf8"));
const keys = Object.fromEntries(doc.trustedKeys.map((k) => [k.kid, k.publicKeyPem]));
const pins = doc.pinnedKeys;
const stepUp = {
  rpId: doc.stepUpRpId, origins: doc.stepUpOrigins, require: doc.requireStepUp,
  pinned: (tenant, user) => (tenant === pins.tenantId && user === pins.userId ? pins.keys : undefined),
};
const base = { keys, issuer: doc.issuer, audience: doc.audience, expected: doc.action, now: doc.now, leeway: doc.leewaySeconds };
const failures = [];
for (const c of doc.cases) {
  let got;
  try {
    await verifyProof(c.token, { ...base, stepUp });
    got = "accept";
  } catch (e) {
    if (!(e instanceof Refused)) throw e;
    got = `refuse (${e.message})`;
  }
  if ((got === "accept") !== (c.expect === "accept")) failures.push(`${c.name}: expected ${c.expect}, got ${got}`);
  console.log(`  ${c.name.padEnd(28)} ${got}`);
}
const valid = doc.cases.find((c) => c.name === "valid-es256").token;
try {
  await verifyProof(valid, base);
  failures.push("a verifier without step-up settings accepted a step-up proof");
} catch (e) {
  if (!(e instanceof Refused)) throw e;
}
if (failures.length) {
  console.error(`step-up vectors failed:\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log(`typescript recipe: all ${doc.cases.length} step-up vectors as expected`);
