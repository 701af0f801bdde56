// Unit tests of the widget's state logic and API client (Node's own test runner).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  Client, caseKey, clockTime, isAnswerable, languageOf, lastAssistantId, mergeMessages, nearAnswerWord, outgoing, parseMarkdown, proposalState, retryAfterSeconds, texts, tokenSubject,
} from "../src/widget.js";

const m = (id, role, kind = "text", content = id) => ({ id, role, kind, content });

test("W-3: a message replies to the last assistant message rendered in this tab", () => {
  const rendered = [m("msg_1", "assistant"), m("msg_2", "user"), m("msg_3", "assistant", "proposal"), m("msg_4", "user")];
  assert.deepEqual(outgoing("hello", rendered), { content: "hello", replyToMessageId: "msg_3" });
  assert.deepEqual(outgoing("hello", []), { content: "hello" });
  assert.equal(lastAssistantId([m("msg_1", "user")]), null);
});

test("W-3: what another tab received is not rendered here, so it is not replied to", () => {
  const tabA = [m("msg_1", "assistant"), m("msg_2", "user"), m("msg_3", "assistant", "proposal")];
  const tabB = tabA.slice(0, 1);
  assert.equal(outgoing("confirm", tabB).replyToMessageId, "msg_1");
  assert.equal(outgoing("confirm", tabA).replyToMessageId, "msg_3");
});

test("messages merge by id, in id order, without duplicates", () => {
  const merged = mergeMessages([m("msg_2", "user"), m("msg_1", "assistant")], [m("msg_3", "assistant"), m("msg_2", "user", "text", "again")]);
  assert.deepEqual(merged.map((x) => x.id), ["msg_1", "msg_2", "msg_3"]);
  assert.equal(merged[1].content, "again");
});

test("W-5: only the proposal that is the last message rendered can be answered", () => {
  const p = m("msg_3", "assistant", "proposal");
  assert.ok(isAnswerable([m("msg_1", "user"), p], p));
  assert.ok(!isAnswerable([p, m("msg_4", "user")], p));
  assert.ok(!isAnswerable([p, m("msg_5", "assistant", "result")], p));
  assert.ok(!isAnswerable([m("msg_1", "assistant")], m("msg_1", "assistant")));
});

test("S-3: a proposal that is no longer pending, or past its expiry, cannot be answered", () => {
  const p = m("msg_3", "assistant", "proposal");
  const now = Date.parse("2026-12-01T10:00:00Z");
  const pending = { messageId: "msg_3", state: "pending_confirmation", expiresAt: "2026-12-01T10:05:00Z" };
  assert.ok(isAnswerable([p], p, pending, now));
  assert.ok(!isAnswerable([p], p, { ...pending, state: "superseded" }, now));
  assert.ok(!isAnswerable([p], p, pending, Date.parse("2026-12-01T10:05:00Z")));
  assert.equal(proposalState(pending, Date.parse("2026-12-01T10:06:00Z")), "expired");
  assert.equal(proposalState({ ...pending, state: "completed" }, now), "completed");
  assert.equal(proposalState(undefined, now), "pending_confirmation");
});

test("model text: the markdown subset; only http(s) and mailto links are links", () => {
  const blocks = parseMarkdown("Hi **you**, see [docs](https://x.example/a) or [no](javascript:alert(1)).\n\n- one *a*\n- `two`\n\n```\n<b>raw</b>\n```");
  assert.deepEqual(blocks[0], {
    type: "p",
    inlines: [
      { t: "text", v: "Hi " }, { t: "strong", v: "you" }, { t: "text", v: ", see " },
      { t: "a", v: "docs", href: "https://x.example/a" }, { t: "text", v: " or [no](javascript:alert(1))." },
    ],
  });
  assert.deepEqual(blocks[1], { type: "ul", items: [[{ t: "text", v: "one " }, { t: "em", v: "a" }], [{ t: "code", v: "two" }]] });
  assert.deepEqual(blocks[2], { type: "pre", text: "<b>raw</b>" });
  assert.deepEqual(parseMarkdown("1. a\n2. b")[0].type, "ol");
  assert.deepEqual(parseMarkdown("<img src=x onerror=alert(1)>"), [{ type: "p", inlines: [{ t: "text", v: "<img src=x onerror=alert(1)>" }] }]);
  assert.deepEqual(parseMarkdown("[x](data:text/html,hi)")[0].inlines, [{ t: "text", v: "[x](data:text/html,hi)" }]);
  // Identifiers keep their underscores; a lone star is text.
  assert.deepEqual(parseMarkdown("ses_a1 on car_a2, 2 * 3")[0].inlines, [{ t: "text", v: "ses_a1 on car_a2, 2 * 3" }]);
});

test("S-4: language tags: pt-BR is Portuguese; unknown ones are no choice", () => {
  assert.equal(languageOf("pt-BR"), "pt");
  assert.equal(languageOf("PT"), "pt");
  assert.equal(languageOf("en-GB"), "en");
  assert.equal(languageOf("fr"), null);
  assert.equal(languageOf(undefined), null);
  assert.equal(texts("pt-BR").confirmWord, "confirmar");
  assert.equal(texts("pt-BR").states.completed, "Confirmada e executada");
});

const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
const jwt = (claims) => `${b64({ alg: "HS256", kid: "wk_x" })}.${b64(claims)}.sig`;

test("W-4: the open case is kept per API, tenant and person", () => {
  const t = jwt({ sub: "u_alice", tid: "t_1", iat: 1, exp: 2 });
  assert.deepEqual(tokenSubject(t), { sub: "u_alice", tid: "t_1" });
  assert.equal(caseKey("https://api.example", t), "countersign:case:https://api.example:t_1:u_alice");
  assert.equal(caseKey("https://api.example", "not-a-jwt"), null);
  assert.equal(tokenSubject(jwt({ sub: 1 })), null);
});

test("English and Portuguese texts send the platform's literal words", () => {
  assert.equal(texts("en").confirmWord, "confirm");
  assert.equal(texts("pt").confirmWord, "confirmar");
  assert.equal(texts("pt").cancelWord, "cancelar");
  assert.equal(texts("fr"), texts("en"));
});

function fakeFetch(statuses) {
  const calls = [];
  const f = async (url, init) => {
    calls.push({ url, init });
    const status = statuses.shift();
    return {
      status,
      ok: status >= 200 && status < 300,
      json: async () => (status === 200 ? { messages: [] } : { error: { code: status === 401 ? "UNAUTHORIZED" : "X", message: "m" } }),
    };
  };
  f.calls = calls;
  return f;
}

test("W-2: on 401 a fresh token is asked for once and the request sent again", async () => {
  let n = 0;
  const fetch = fakeFetch([401, 200]);
  const c = new Client("https://api.example/", async () => `tok${++n}`, fetch);
  await c.request("GET", "/api/cases/c/messages");
  assert.equal(n, 2);
  assert.deepEqual(fetch.calls.map((x) => x.init.headers.Authorization), ["Bearer tok1", "Bearer tok2"]);
  assert.equal(fetch.calls[0].url, "https://api.example/api/cases/c/messages");
});

test("W-2: a second 401 is an error, not a loop", async () => {
  let n = 0;
  const c = new Client("https://api.example", async () => `tok${++n}`, fakeFetch([401, 401, 200]));
  await assert.rejects(c.request("POST", "/api/cases"), (e) => e.status === 401 && e.code === "UNAUTHORIZED");
  assert.equal(n, 2);
});

test("W-5: a failed send is never sent again by the client", async () => {
  const fetch = fakeFetch([500, 200]);
  const c = new Client("https://api.example", async () => "tok", fetch);
  await assert.rejects(c.request("POST", "/api/cases/c/messages", { content: "confirm" }), (e) => e.status === 500);
  assert.equal(fetch.calls.length, 1);
  assert.equal(fetch.calls[0].init.credentials, "omit");
});

/** A streamed answer whose bytes arrive in `chunks`, optionally breaking after them. */
function streamed(chunks, breaks = false) {
  const enc = new TextEncoder();
  let i = 0;
  return new Response(new ReadableStream({
    pull(c) {
      if (i < chunks.length) return c.enqueue(enc.encode(chunks[i++]));
      return breaks ? c.error(new TypeError("network")) : c.close();
    },
  }), { status: 200, headers: { "Content-Type": "application/x-ndjson" } });
}

test("S-1: the streamed post goes to the stream URL; events are read across chunk cuts", async () => {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push(url);
    return streamed(['{"type":"mess', 'age","message":{"id":"m1"}}\n{"type":"delta","text":"Ol', 'á"}\n', '{"type":"end"}\n']);
  };
  const c = new Client("https://api.example", async () => "tok", fetch, "https://stream.example/");
  const events = [];
  await c.stream("/api/cases/c/messages/stream", { content: "x" }, (e) => events.push(e));
  assert.deepEqual(calls, ["https://stream.example/api/cases/c/messages/stream"]);
  assert.deepEqual(events.map((e) => e.type), ["message", "delta", "end"]);
  assert.equal(events[1].text, "Olá");
});

test("S-1: a stream that breaks or ends early is a cut (read the history); a refusal is an ApiError", async () => {
  const broken = new Client("https://api.example", async () => "tok", async () => streamed(['{"type":"delta","text":"a"}\n'], true));
  await assert.rejects(broken.stream("/s", {}, () => {}), (e) => e.cut === true);
  const early = new Client("https://api.example", async () => "tok", async () => streamed(['{"type":"delta","text":"a"}\n']));
  await assert.rejects(early.stream("/s", {}, () => {}), (e) => e.cut === true);
  const refused = new Client("https://api.example", async () => "tok", async () => new Response(JSON.stringify({ error: { code: "CASE_CLOSED", message: "closed" } }), { status: 409 }));
  await assert.rejects(refused.stream("/s", {}, () => {}), (e) => e.status === 409 && e.code === "CASE_CLOSED" && !e.cut);
});

test("W-4: a history longer than one page is read page by page, after the last id of each", async () => {
  // 1,203 messages on the server: pages of 500, 500 and 203.
  const all = Array.from({ length: 1203 }, (_, i) => m(`msg_${String(i).padStart(5, "0")}`, i % 2 ? "assistant" : "user"));
  const asked = [];
  const fetch = async (url) => {
    const u = new URL(url);
    asked.push(u.search);
    assert.equal(u.searchParams.get("limit"), "500");
    const after = u.searchParams.get("after");
    const from = after ? all.findIndex((x) => x.id === after) + 1 : 0;
    const page = all.slice(from, from + 500);
    return new Response(JSON.stringify({ messages: page, proposals: [] }), { status: 200 });
  };
  const c = new Client("https://api.example", async () => "tok", fetch);
  const { messages } = await c.history("case_1");
  assert.equal(messages.length, 1203);
  assert.deepEqual(messages.map((x) => x.id), all.map((x) => x.id));
  assert.deepEqual(asked, ["?limit=500", "?limit=500&after=msg_00499", "?limit=500&after=msg_00999"]);
});

test("issue 50: near an answer word gets a hint; the word alone, any case, never does (A-24 unchanged)", () => {
  const en = ["confirm", "cancel"];
  for (const near of ["confirm.", "confirmed", "confirma", "yes, confirm it", "Confirm!", "cancelled", "please cancel"]) {
    assert.ok(nearAnswerWord(near, en), near);
  }
  for (const exact of ["confirm", "Confirm", "CONFIRM", " cancel ", "Cancel"]) assert.equal(nearAnswerWord(exact, en), null, exact);
  for (const other of ["please configure my account", "where is my order?", "cancer research", "information"]) {
    assert.equal(nearAnswerWord(other, en), null, other);
  }
  const pt = ["confirmar", "cancelar"];
  assert.equal(nearAnswerWord("confirmo", pt), "confirmar");
  assert.equal(nearAnswerWord("Pode cancelar.", pt), "cancelar");
  assert.equal(nearAnswerWord("confirmar", pt), null);
  assert.equal(nearAnswerWord("CONFIRMAR", pt), null);
});

test("issue 50: Retry-After in seconds, bounded; absent or a date is none", () => {
  const res = (v) => ({ headers: new Headers(v === null ? {} : { "Retry-After": v }) });
  assert.equal(retryAfterSeconds(res("7")), 7);
  assert.equal(retryAfterSeconds(res("0.2")), 1);
  assert.equal(retryAfterSeconds(res("99999")), 3600);
  assert.equal(retryAfterSeconds(res(null)), null);
  assert.equal(retryAfterSeconds(res("Wed, 21 Oct 2015 07:28:00 GMT")), null);
});

test("issue 50: a message's time is the person's local hour and minute; a bad time is none", () => {
  assert.match(clockTime("2026-12-04T09:05:00Z", "en"), /\d{1,2}:05/);
  assert.match(clockTime("2026-12-04T09:05:00Z", "pt"), /\d{2}:05/);
  assert.equal(clockTime("not a time", "en"), "");
});
