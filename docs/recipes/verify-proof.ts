// Verifies a Countersign proof (the `X-MCP-Confirmation` header) with every check of
// docs/provider-guide.md §6, in that order. `jose` checks only the RS256 signature here
// (`compactVerify`); every other rule is checked explicitly, because a plain `jwtVerify`
// accepts an audience array, ignores `typ` and extra header fields, and does not know
// the fourteen claims.
import { createHash, createPublicKey, verify as verifySignature } from "node:crypto";
import { compactVerify, exportSPKI, importJWK, importSPKI } from "jose";

const CLAIMS = ["iss", "aud", "sub", "tenantId", "conversationId", "actionId", "operation",
  "argumentsHash", "summaryHash", "messageId", "presentedMessageId", "jti", "iat", "exp"];
const HEADER = new Set(["alg", "typ", "kid"]);
const BINDINGS: Array<[string, keyof ExpectedAction]> = [
  ["tenantId", "tenantId"], ["sub", "userId"], ["conversationId", "conversationId"],
  ["actionId", "actionId"], ["operation", "operation"],
  ["argumentsHash", "argumentsHash"], ["summaryHash", "summaryHash"],
];

/** The stored action being executed, and the call's identity headers. */
export interface ExpectedAction {
  tenantId: string; userId: string; conversationId: string; actionId: string;
  operation: string; argumentsHash: string; summaryHash: string;
}

export interface VerifyOptions {
  /** Installed keys: `kid` → public key PEM (SPKI). */
  keys: Record<string, string>;
  issuer: string;
  audience: string;
  expected: ExpectedAction;
  /** Unix seconds. */
  now: number;
  leeway?: number;
  /** Records `jti` atomically; false when it was already recorded (a replay). */
  consume?: (jti: string, exp: number) => Promise<boolean>;
  /** N-1: claims the action's one execution atomically, for good; false when it was
   *  already claimed (a second proof for an executed action: answer its recorded status). */
  claim?: (tenantId: string, actionId: string) => Promise<boolean>;
  /** F-5: accept `support-action-stepup+jwt` proofs and check the person's passkey
   *  assertion in them (docs/provider-guide.md §6.1); without it they are refused. */
  stepUp?: StepUpOptions;
}

export interface StepUpOptions {
  /** The platform's `stepUpRpId` and `stepUpOrigins`. */
  rpId: string;
  origins: string[];
  /** Operations whose proofs must carry a step-up, whatever the platform's settings. */
  require?: string[];
  /** The JWKs you pinned for the person; undefined when you keep none for them. */
  pinned?: (tenantId: string, userId: string) => Array<Record<string, unknown>> | undefined;
}

const STEPUP_TAG = "countersign-stepup-v1";
const AMR = new Set(["pop", "user", "mfa"]);
const EVIDENCE = ["credentialId", "credentialKey", "authenticatorData", "clientDataJSON", "signature", "nonce"];

/** SHA-256 over the tag and eight fields, each prefixed by its 4-byte big-endian length. */
export function stepUpChallenge(claims: Record<string, unknown>, nonce: string): Buffer {
  const h = createHash("sha256");
  for (const f of [STEPUP_TAG, claims.tenantId, claims.conversationId, claims.actionId, claims.operation,
    claims.argumentsHash, claims.summaryHash, claims.presentedMessageId, nonce]) {
    const b = Buffer.from(String(f), "utf8");
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    h.update(len).update(b);
  }
  return h.digest();
}

/** F-5: refuses unless `ev` (the proof's `stepUp`) is the person's passkey assertion over
 *  this very action. The signature counter is the platform's to keep. */
function checkStepUp(claims: Record<string, unknown>, ev: Record<string, unknown>, o: StepUpOptions): void {
  const keys = Object.keys(ev);
  if (keys.length !== EVIDENCE.length || !EVIDENCE.every((k) => typeof ev[k] === (k === "credentialKey" ? "object" : "string"))) {
    throw new Refused("step-up: malformed");
  }
  const jwk = ev.credentialKey as Record<string, unknown>;
  const pinned = o.pinned?.(claims.tenantId as string, claims.sub as string);
  if (pinned && !pinned.some((p) => JSON.stringify(p) === JSON.stringify(jwk))) throw new Refused("step-up: not pinned");
  const clientRaw = Buffer.from(ev.clientDataJSON as string, "base64url");
  const client = JSON.parse(clientRaw.toString("utf8")) as Record<string, unknown>;
  if (client.type !== "webauthn.get") throw new Refused("step-up: type");
  if (client.challenge !== stepUpChallenge(claims, ev.nonce as string).toString("base64url")) throw new Refused("step-up: challenge");
  if (!o.origins.includes(client.origin as string) || client.crossOrigin === true) throw new Refused("step-up: origin");
  const data = Buffer.from(ev.authenticatorData as string, "base64url");
  if (data.length < 37) throw new Refused("step-up: malformed");
  if (!data.subarray(0, 32).equals(createHash("sha256").update(o.rpId).digest())) throw new Refused("step-up: rp id");
  if (!(data[32] & 0x01)) throw new Refused("step-up: user presence");
  if (!(data[32] & 0x04)) throw new Refused("step-up: user verification");
  const signed = Buffer.concat([data, createHash("sha256").update(clientRaw).digest()]);
  const ec = jwk.kty === "EC" && jwk.crv === "P-256";
  if (!ec && !(jwk.kty === "OKP" && jwk.crv === "Ed25519")) throw new Refused("step-up: credential key");
  const key = createPublicKey({ key: jwk as never, format: "jwk" });
  // ES256: a DER signature (high-S accepted); EdDSA: the raw 64 bytes.
  const ok = verifySignature(ec ? "sha256" : null, signed, key, Buffer.from(ev.signature as string, "base64url"));
  if (!ok) throw new Refused("step-up: signature");
}

/**
 * The proof keys of a JWK Set (the platform's `/.well-known/jwks.json`), as kid → SPKI PEM.
 * A document or key marked with a `purpose` (the platform's audit checkpoint keys) is never
 * a source of proof keys: such a document is refused and such a key left out.
 */
export async function proofKeysFromJwks(document: unknown): Promise<Record<string, string>> {
  if (typeof document !== "object" || document === null || "purpose" in document) {
    throw new Refused("not the proofs' JWKS");
  }
  const keys: Record<string, string> = {};
  const list = (document as { keys?: unknown }).keys;
  for (const k of Array.isArray(list) ? list : []) {
    if (typeof k !== "object" || k === null || "purpose" in k || k.kty !== "RSA") continue;
    if ((k.alg ?? "RS256") !== "RS256" || (k.use ?? "sig") !== "sig" || typeof k.kid !== "string") continue;
    const key = await importJWK({ kty: "RSA", n: k.n, e: k.e }, "RS256");
    keys[k.kid] = await exportSPKI(key as CryptoKey);
  }
  return keys;
}

/** The proof is refused: answer a tool error and write nothing. */
export class Refused extends Error {}

function segment(part: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  } catch {
    throw new Refused("malformed");
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new Refused("malformed");
  return value as Record<string, unknown>;
}

export async function verifyProof(token: string, o: VerifyOptions): Promise<Record<string, unknown>> {
  const leeway = o.leeway ?? 5;
  const parts = typeof token === "string" ? token.split(".") : [];
  if (parts.length !== 3) throw new Refused("malformed");
  const header = segment(parts[0]);
  for (const field of ["jku", "x5u", "jwk", "x5c"]) {
    if (field in header) throw new Refused(`embedded key (${field})`); // never take a key from the token
  }
  if (header.alg !== "RS256") throw new Refused("algorithm"); // before any key is used
  const stepped = header.typ === "support-action-stepup+jwt";
  if (header.typ !== "support-action+jwt" && !(stepped && o.stepUp)) throw new Refused("type");
  if (Object.keys(header).some((k) => !HEADER.has(k))) throw new Refused("unexpected header field");
  const pem = typeof header.kid === "string" ? o.keys[header.kid] : undefined;
  if (!pem) throw new Refused("unknown key");
  let payload: Uint8Array;
  try {
    const key = await importSPKI(pem, "RS256");
    ({ payload } = await compactVerify(token, key, { algorithms: ["RS256"] }));
  } catch {
    throw new Refused("signature");
  }
  const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
  let evidence: Record<string, unknown> | undefined;
  if (stepped) {
    const { stepUp, amr } = claims;
    delete claims.stepUp;
    delete claims.amr;
    if (!stepUp || typeof stepUp !== "object" || !Array.isArray(amr) || amr.some((m) => !AMR.has(m))) {
      throw new Refused("step-up: malformed");
    }
    evidence = stepUp as Record<string, unknown>;
  }
  if (claims.iss !== o.issuer) throw new Refused("issuer");
  if (typeof claims.aud !== "string" || claims.aud !== o.audience) throw new Refused("audience");
  const names = Object.keys(claims);
  if (names.length !== CLAIMS.length || !CLAIMS.every((c) => names.includes(c))) throw new Refused("claims");
  const { iat, exp } = claims;
  if (!Number.isInteger(iat) || !Number.isInteger(exp)) throw new Refused("times");
  const [i, e] = [iat as number, exp as number];
  if (e <= i || e - i > 60) throw new Refused("lifetime");
  if (i > o.now + leeway) throw new Refused("not yet valid");
  if (o.now > e + leeway) throw new Refused("expired");
  for (const [claim, field] of BINDINGS) {
    if (claims[claim] !== o.expected[field]) throw new Refused(`${claim} does not match`);
  }
  if (typeof claims.jti !== "string" || claims.jti === "") throw new Refused("jti");
  if (o.stepUp && !evidence && (o.stepUp.require ?? []).includes(claims.operation as string)) {
    throw new Refused("step-up required");
  }
  if (evidence && o.stepUp) checkStepUp(claims, evidence, o.stepUp);
  if (o.consume && !(await o.consume(claims.jti, e))) throw new Refused("replayed");
  if (o.claim && !(await o.claim(claims.tenantId as string, claims.actionId as string))) throw new Refused("already executed");
  return claims;
}
