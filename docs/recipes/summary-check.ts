// Checks a `summary` (or a status `message`) against the rules the platform applies before
// it shows one to a person; a text that breaks any of them makes the platform refuse your
// whole answer. Run it before you answer `prepare_action`. The rules in words are in
// summary_check.py (the same check in Python); docs/summary-test-vectors.json holds the
// platform's verdict on examples of each, and this check agrees with every one.
import { isIP } from "node:net";

export const MAX_CHARS = 4000;
const DIRECTION = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}\u034F\u115F\u1160\u3164\uFFA0\u2800]/u;
const SECRETS: Array<[string, RegExp]> = [
  ["JWT", /eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*/],
  ["admin key", /tsk_[A-Za-z0-9_-]{8,}/],
  ["widget secret", /wsk_[A-Za-z0-9_-]{8,}/],
  ["AWS access key id", /(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}/],
  ["private key", /-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----/],
];
const BEARER = /bearer\s+([A-Za-z0-9\-._~+/]+=*)/gi;
const URL_LIKE = /[A-Za-z0-9+.-]*:\/\/[^\s<>'`]*/g;
const INTERNAL_NAME = /\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:internal|local|localhost)\b|\blocalhost\b/i;
const DOTTED = /[0-9][0-9.]*[0-9]/g;

function internalV4(o: number[]): boolean {
  const [a, b] = o;
  return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b < 128) || (a === 169 && b === 254)
    || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168) || (a === 192 && b === 0 && o[2] === 0)
    || (a === 192 && b === 0 && o[2] === 2) || (a === 198 && (b === 18 || b === 19)) || (a === 198 && b === 51 && o[2] === 100)
    || (a === 203 && b === 0 && o[2] === 113) || a >= 224;
}

function internalHost(raw: string): boolean {
  const host = raw.replace(/^\[|\]$/g, "").toLowerCase();
  if (isIP(host) === 4) return internalV4(host.split(".").map(Number));
  if (isIP(host) === 6) {
    const first = parseInt(host.split(":")[0] || "0", 16);
    return host === "::1" || host === "::" || (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80
      || (first & 0xff00) === 0xff00 || host.startsWith("::ffff:") || host.startsWith("2001:db8");
  }
  return !host.includes(".") || /\.(internal|local|localhost)$/.test(host) || host === "localhost";
}

function dottedInternal(nums: string[]): boolean {
  for (let s = 0; s + 4 <= nums.length; s++) {
    const w = nums.slice(s, s + 4);
    if (w.some((n) => n === "")) continue;
    for (let i = Math.min(3, w[0].length); i > 0; i--) {
      for (let j = Math.min(3, w[3].length); j > 0; j--) {
        const o = [Number(w[0].slice(-i)), Number(w[1]), Number(w[2]), Number(w[3].slice(0, j))];
        if (o.every((x) => x <= 255) && internalV4(o)) return true;
      }
    }
  }
  return false;
}

/** Every broken rule, in words (empty when the platform will accept `text`). */
export function summaryProblems(text: string): string[] {
  const chars = [...text];
  if (chars.length === 0) return ["empty"];
  const out = new Set<string>();
  if (text.trim() === "") out.add("only white space");
  if (chars.length > MAX_CHARS) out.add(`${chars.length} characters; at most ${MAX_CHARS}`);
  for (const c of chars) {
    if (c === "\n" || c === "\t") continue;
    if (/\p{Cc}/u.test(c)) out.add("control character");
    else if (DIRECTION.test(c)) out.add("direction-control character");
    else if (INVISIBLE.test(c)) out.add("invisible character");
  }
  for (const m of text.matchAll(BEARER)) {
    const t = m[1].replace(/[.,]+$/, "");
    if (t.length >= 12 && !/^[A-Za-z]+$/.test(t)) out.add("looks like a secret (bearer token)");
  }
  for (const [name, re] of SECRETS) if (re.test(text)) out.add(`looks like a secret (${name})`);
  for (const m of text.matchAll(URL_LIKE)) {
    const candidate = m[0].replace(/[.,;:!?)"]+$/, "");
    try {
      const u = new URL(candidate);
      if (u.username || u.password) out.add("looks like a secret (URL with credentials)");
      if (!u.hostname || internalHost(u.hostname)) out.add("internal address");
    } catch {
      out.add("internal address");
    }
  }
  if (INTERNAL_NAME.test(text)) out.add("internal address");
  for (const m of text.matchAll(DOTTED)) if (dottedInternal(m[0].split("."))) out.add("internal address");
  return [...out];
}
