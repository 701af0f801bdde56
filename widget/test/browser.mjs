// W-7: the widget in a real headless Chromium, on the local run's demo page (a fake
// tenant site with a strict CSP whose backend mints the demo person's widget JWT).
//
//   DEMO_URL=http://127.0.0.1:8701/ ARTIFACTS=target/widget node --test test/browser.mjs
//
// Each test opens fresh pages in one browser; every page's console must stay free of
// errors (CSP violations included).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { chromium } from "playwright-core";

const DEMO = process.env.DEMO_URL || "http://127.0.0.1:8701/";
const ARTIFACTS = process.env.ARTIFACTS || "target/widget-artifacts";
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
let browser;
const consoleErrors = [];

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  assert.deepEqual(consoleErrors, [], "no page logged an error");
});

/** A new browser context (its own storage) with one page on the demo. `expected` is a
 *  console error the test provokes on purpose (the browser logs every 401 it receives). */
async function person(query = "", expected = null) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" && !(expected && m.text().includes(expected))) consoleErrors.push(`${m.text()} @ ${page.url()}`);
  });
  page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
  await open(page, query);
  return { ctx, page };
}

async function open(page, query = "") {
  await page.goto(DEMO + query);
  await page.waitForFunction(() => window.demo && window.demo.widget && window.demo.widget.caseId);
  await page.waitForFunction(() => window.demo.ready === true);
}

/** Messages as rendered: [{id, kind, role, text, time}] from the shadow DOM (`text`
 *  without the timestamp, which is `time`). */
function rendered(page) {
  return page.locator("#chat").evaluate((host) =>
    [...host.shadowRoot.querySelectorAll("li.msg:not(.sending):not(.draft)")].map((li) => {
      const copy = li.cloneNode(true);
      const time = copy.querySelector("time.at");
      if (time) time.remove();
      return {
        id: li.dataset.id, kind: li.dataset.kind, state: li.dataset.state, role: li.classList.contains("user") ? "user" : "assistant", text: copy.textContent,
        time: time ? time.getAttribute("datetime") : null,
      };
    }));
}

const count = (n) => document.querySelector("#chat").shadowRoot.querySelectorAll("li.msg:not(.sending):not(.draft)").length > n;

async function type(page, text) {
  const before = (await rendered(page)).length;
  const input = page.locator("#chat textarea");
  await input.fill(text);
  await input.press("Enter");
  await page.waitForFunction(count, before);
  await page.waitForFunction(() => !window.demo.widget.busy);
}

async function press(page, label) {
  const before = (await rendered(page)).length;
  await page.locator("#chat li.proposal").last().getByRole("button", { name: label }).click();
  await page.waitForFunction(count, before);
  await page.waitForFunction(() => !window.demo.widget.busy);
}

/** The element focused inside the widget's shadow root: `tag.class` or null. */
function focused(page) {
  return page.locator("#chat").evaluate((h) => {
    const a = h.shadowRoot.activeElement;
    return a ? `${a.tagName.toLowerCase()}${a.className ? "." + a.className.split(" ").join(".") : ""}${a.dataset.word ? "[" + a.dataset.word + "]" : ""}` : null;
  });
}

/** Presses Tab until `want` (a predicate on focused()) holds; at most `max` presses. */
async function tabTo(page, want, max = 25) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press("Tab");
    if (want(await focused(page))) return;
  }
  assert.fail(`Tab never reached the element (last: ${await focused(page)})`);
}

const last = async (page) => (await rendered(page)).at(-1);

/** the person's own MCP client gets a gateway token for the open conversation
 *  and prepares "move ses_a2 to car_a3" through /mcp. Returns the JSON-RPC answer. */
async function prepareThroughMcp(page) {
  const api = await page.evaluate(() => document.querySelector('meta[name="countersign-api"]').content.replace(/\/$/, ""));
  const caseId = await page.evaluate(() => window.demo.widget.caseId);
  const jwt = await (await fetch(new URL("token?user=u_alice", DEMO))).text();
  const minted = await fetch(`${api}/api/cases/${caseId}/mcp-token`, {
    method: "POST", headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" }, body: "{}",
  });
  assert.equal(minted.status, 201);
  const { token } = await minted.json();
  const rpc = await fetch(`${api}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "prepare_action", arguments: { operation: "reassign_session_car", arguments: { sessionId: "ses_a2", carId: "car_a3" } } } }),
  });
  return rpc.json();
}

test("W-7: consult and see the answer", async () => {
  const { ctx, page } = await person();
  await type(page, "show my sessions");
  const answer = await last(page);
  assert.equal(answer.role, "assistant");
  assert.match(answer.text, /ses_a1/);
  assert.doesNotMatch(answer.text, /[{}"]/, "issue 50: readable lines, never raw JSON");
  await ctx.close();
});

test("W-7, W-5: a write is proposed, confirmed with the button, and its result shown", async () => {
  const { ctx, page } = await person();
  await type(page, "move ses_a2 to car_a3");
  const proposal = await last(page);
  assert.equal(proposal.kind, "proposal");
  assert.match(proposal.text, /Move the session at Spa-Francorchamps/);
  assert.match(proposal.text, /To carry out exactly the action above, reply: confirm/);
  await press(page, "Confirm");
  const all = await rendered(page);
  const mine = all.at(-2);
  assert.equal(mine.role, "user");
  assert.match(mine.text, /confirm$/);
  assert.equal(all.at(-1).kind, "result");
  assert.match(all.at(-1).text, /Action completed/);
  // The proposal's buttons are spent.
  assert.equal(await page.locator("#chat li.proposal button:enabled").count(), 0);
  await page.screenshot({ path: `${ARTIFACTS}/proposal-and-result.png`, fullPage: true });
  // Put the car back for the other tests.
  await type(page, "move ses_a2 to car_a1");
  await press(page, "Confirm");
  await ctx.close();
});

test("X-1, X-5: a write prepared by the person's own MCP client appears in the open widget; only the person's Confirm carries it out", async () => {
  const { ctx, page } = await person("?poll=300");
  const before = (await rendered(page)).length;
  const answer = await prepareThroughMcp(page);
  assert.equal(answer.result.structuredContent.data.status, "pending_confirmation", JSON.stringify(answer));
  // The open widget shows it without a reload, as a proposal with its buttons.
  await page.waitForFunction(count, before);
  const proposal = await last(page);
  assert.equal(proposal.kind, "proposal");
  assert.match(proposal.text, /Move the session at Spa-Francorchamps/);
  // Issue 50: the card says an app the person connected prepared it (a stored field).
  assert.equal(await page.locator("#chat li.proposal").last().locator(".attribution").textContent(), "Prepared by an app you connected to this account");
  await press(page, "Confirm");
  assert.match((await last(page)).text, /Action completed/);
  // Put the car back for the other tests.
  await type(page, "move ses_a2 to car_a1");
  await press(page, "Confirm");
  await ctx.close();
});

test("N-6: a proposal that replaced the pending one says so on its card, its buttons wait 5 s, then Confirm carries it out", async () => {
  const { ctx, page } = await person("?poll=300");
  await type(page, "move ses_a2 to car_a3");
  const first = await last(page);
  assert.equal(first.kind, "proposal");
  const before = (await rendered(page)).length;
  const answer = await prepareThroughMcp(page);
  assert.equal(answer.result.structuredContent.data.status, "pending_confirmation");
  await page.waitForFunction(count, before);
  const card = page.locator("#chat li.proposal").last();
  await card.locator(".replaced").waitFor();
  assert.match(await card.locator(".replaced").textContent(), /replaced an earlier one/);
  assert.equal(await card.getByRole("button", { name: "Confirm" }).isDisabled(), true, "inactive at first");
  await page.screenshot({ path: `${ARTIFACTS}/replaced-proposal.png`, fullPage: true });
  // The click waits for the button (5 s), and then the server accepts it.
  await press(page, "Confirm");
  assert.match((await last(page)).text, /Action completed/);
  await type(page, "move ses_a2 to car_a1");
  await press(page, "Confirm");
  await ctx.close();
});

test("W-3, W-4: after a reload with a proposal pending, the restored page confirms it", async () => {
  const { ctx, page } = await person();
  await type(page, "move ses_a1 to car_a2");
  const proposal = await last(page);
  await page.reload();
  await page.waitForFunction(() => window.demo && window.demo.ready === true);
  const restored = await rendered(page);
  assert.equal(restored.at(-1).id, proposal.id, "the history is restored");
  await press(page, "Confirm");
  assert.match((await last(page)).text, /Action completed/);
  await type(page, "move ses_a1 to car_a1");
  await press(page, "Confirm");
  await ctx.close();
});

test("W-3: a second tab that did not render the proposal cannot confirm it", async () => {
  // Live updates off (S-2 would show B the proposal within seconds): what B replies to is
  // what B rendered, whatever that is.
  const { ctx, page: a } = await person("?poll=600000");
  const b = await ctx.newPage();
  b.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  await open(b, "?poll=600000");
  assert.equal(await b.evaluate(() => window.demo.widget.caseId), await a.evaluate(() => window.demo.widget.caseId), "one case, two tabs");
  await type(b, "show my cars");
  await type(a, "move ses_a1 to car_a3");
  assert.equal((await last(a)).kind, "proposal");
  const seenByB = (await rendered(b)).filter((m) => m.role === "assistant").at(-1)?.id ?? null;
  await type(b, "confirm");
  assert.equal(await b.evaluate(() => window.demo.lastReply), seenByB, "B replied to what B rendered");
  assert.match((await last(b)).text, /answers an earlier message/);
  await ctx.close();
});

test("W-2: an expired token is replaced through getToken() and the message goes through", async () => {
  const { ctx, page } = await person("?expired=1", "status of 401");
  await type(page, "show my cars");
  assert.match((await last(page)).text, /Cayman GT4/);
  assert.ok((await page.evaluate(() => window.demo.tokens)) >= 2, "a second token was asked for");
  await ctx.close();
});

test("W-5, W-6: markup in a summary, a tool result or model text is shown as text", async () => {
  const { ctx, page } = await person("?user=u_mallory");
  await type(page, "show my cars");
  await type(page, "move ses_m1 to car_m2");
  await type(page, "say <b>bold</b><img src=x onerror=\"window.__xss=1\">");
  const all = await rendered(page);
  assert.ok(all.some((m) => m.kind === "proposal" && m.text.includes("<img src=x")), JSON.stringify(all));
  assert.ok(all.some((m) => m.text.includes("<b>bold</b>")));
  const elements = await page.locator("#chat").evaluate((h) => h.shadowRoot.querySelectorAll("li img, li b, li script").length);
  assert.equal(elements, 0, "no markup was rendered as elements");
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  await ctx.close();
});

test("W-6: the host page's styles do not reach the widget; a live region; keyboard use", async () => {
  const { ctx, page } = await person();
  await type(page, "operations");
  const color = await page.locator("#chat").evaluate((h) => getComputedStyle(h.shadowRoot.querySelector("li")).color);
  assert.notEqual(color, "rgb(255, 0, 0)", "the page's red rule stayed outside");
  const log = await page.locator("#chat").evaluate((h) => {
    const l = h.shadowRoot.querySelector("[role=log]");
    return l && l.getAttribute("aria-live");
  });
  assert.equal(log, "polite");
  // Keyboard only, really: Tab from the page into the text box, type, Enter; then Tab to
  // a proposal's Confirm and press it with the keyboard; focus stays in the widget.
  await page.locator("body").click({ position: { x: 1, y: 1 } });
  await tabTo(page, (f) => f === "textarea");
  await page.keyboard.type("move ses_a2 to car_a3");
  let before = (await rendered(page)).length;
  await page.keyboard.press("Enter");
  await page.waitForFunction(count, before);
  await page.waitForFunction(() => !window.demo.widget.busy);
  assert.equal((await last(page)).kind, "proposal");
  await tabTo(page, (f) => f === "button.primary.answer[confirm]");
  before = (await rendered(page)).length;
  await page.keyboard.press("Enter");
  await page.waitForFunction(count, before);
  await page.waitForFunction(() => !window.demo.widget.busy);
  assert.match((await last(page)).text, /Action completed/);
  assert.equal(await focused(page), "textarea", "focus stays in the widget after Confirm");
  await type(page, "move ses_a2 to car_a1");
  await press(page, "Confirm");
  await ctx.close();
});

test("S-3: each proposal card shows its outcome; the result is styled by it", async () => {
  const { ctx, page } = await person();
  await type(page, "move ses_a2 to car_a3");
  const first = await last(page);
  assert.equal(first.state, "pending_confirmation");
  assert.match(first.text, /expires in/);
  await press(page, "Cancel");
  await type(page, "move ses_a2 to car_a3");
  await type(page, "show my cars");
  await type(page, "move ses_a2 to car_a3");
  await press(page, "Confirm");
  const cards = (await rendered(page)).filter((m) => m.kind === "proposal");
  assert.deepEqual(cards.map((c) => c.state), ["cancelled", "cancelled", "completed"]);
  assert.match(cards[0].text, /Cancelled/);
  assert.match(cards[2].text, /Confirmed and carried out/);
  assert.equal(await page.locator("#chat li.result.good").count(), 1);
  assert.equal(await page.locator("#chat li.proposal button.answer:enabled").count(), 0);
  await type(page, "move ses_a2 to car_a1");
  await press(page, "Confirm");
  await ctx.close();
});

test("S-3: a restored case that was closed starts a new one with a notice; End conversation", async () => {
  const { ctx, page } = await person("?user=u_bruno");
  await type(page, "show my cars");
  const old = await page.evaluate(() => window.demo.widget.caseId);
  // Closed elsewhere (another tab, the platform): the reload must not restore it.
  await page.evaluate((id) => window.demo.widget.client.request("POST", `/api/cases/${id}/close`), old);
  await page.reload();
  await page.waitForFunction(() => window.demo && window.demo.ready === true);
  const fresh = await page.evaluate(() => window.demo.widget.caseId);
  assert.notEqual(fresh, old);
  assert.match(await page.locator("#chat .status").textContent(), /previous conversation has ended/);
  await type(page, "show my cars");
  assert.match((await last(page)).text, /Cayman GT4|car_/);
  // Issue 50: ending is in a menu and asks first; "Keep talking" changes nothing.
  const chat = page.locator("#chat");
  const kept = (await rendered(page)).length;
  await chat.getByRole("button", { name: "More options" }).click();
  await chat.getByRole("menuitem", { name: "End conversation" }).click();
  assert.match(await chat.locator(".ask-end").textContent(), /End this conversation\?/);
  await chat.getByRole("button", { name: "Keep talking" }).click();
  assert.equal(await page.evaluate(() => window.demo.widget.caseId), fresh);
  // Ended for real: the transcript stays readable, Send is off, a new start is offered.
  await chat.getByRole("button", { name: "More options" }).click();
  await chat.getByRole("menuitem", { name: "End conversation" }).click();
  await chat.getByRole("button", { name: "End it" }).click();
  await page.waitForFunction(() => window.demo.widget.ended === true && !window.demo.widget.busy);
  assert.equal((await rendered(page)).length, kept, "the ended transcript is kept");
  assert.match(await chat.locator("li.ended").textContent(), /This conversation has ended\./);
  assert.equal(await chat.getByRole("button", { name: "Send" }).isDisabled(), true);
  await chat.getByRole("button", { name: "Start a new conversation" }).click();
  await page.waitForFunction((id) => window.demo.widget.caseId && window.demo.widget.caseId !== id && !window.demo.widget.busy, fresh);
  assert.equal((await rendered(page)).length, 0);
  assert.equal(await chat.locator("li.ended").count(), 0);
  await type(page, "show my cars");
  assert.equal((await rendered(page)).at(-1).role, "assistant");
  await ctx.close();
});

test("S-2: two tabs of one person see each other's messages without a reload", async () => {
  const { ctx, page: a } = await person("?user=u_bruno&poll=300");
  const b = await ctx.newPage();
  b.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  await open(b, "?user=u_bruno&poll=300");
  await type(a, "show my cars");
  const fromA = (await rendered(a)).at(-1).id;
  await b.waitForFunction((id) => [...document.querySelector("#chat").shadowRoot.querySelectorAll("li.msg")].some((li) => li.dataset.id === id), fromA);
  await type(b, "show my sessions");
  const fromB = (await rendered(b)).at(-1).id;
  await a.waitForFunction((id) => [...document.querySelector("#chat").shadowRoot.querySelectorAll("li.msg")].some((li) => li.dataset.id === id), fromB);
  assert.deepEqual((await rendered(a)).map((m) => m.id), (await rendered(b)).map((m) => m.id));
  await ctx.close();
});

test("S-4: the walkthrough in Portuguese: every platform text, confirmar", async () => {
  const { ctx, page } = await person("?lang=pt-BR");
  // Issue 50: the tenant's Portuguese welcome and assistant's name; the root's language.
  assert.equal(await page.locator("#chat h2").textContent(), "Suporte TrackShare");
  assert.equal(await page.locator("#chat section.cs").getAttribute("lang"), "pt-BR");
  assert.match(await page.locator("#chat .welcome .greeting").textContent(), /Sou o assistente da TrackShare/);
  await page.setViewportSize({ width: 390, height: 760 });
  await page.screenshot({ path: `${ARTIFACTS}/welcome-pt-390.png` });
  await page.setViewportSize({ width: 1280, height: 720 });
  assert.equal(await page.locator("#chat textarea").getAttribute("placeholder"), "Escreva uma mensagem");
  await type(page, "mover ses_a2 para car_a3");
  const proposal = await last(page);
  assert.equal(proposal.kind, "proposal");
  assert.match(proposal.text, /Mover a sessão em .* do seu carro/, "issue 50: the demo provider's summary in Portuguese");
  assert.match(proposal.text, /Para executar exatamente a ação acima, responda: confirmar/);
  assert.match(proposal.text, /Aguardando sua resposta/);
  // Issue 50: near the word is said before anything is sent; the word alone answers.
  const waiting = (await rendered(page)).length;
  await page.locator("#chat textarea").fill("confirmo");
  await page.locator("#chat textarea").press("Enter");
  await page.waitForFunction(() => /envie só a palavra “confirmar”/.test(document.querySelector("#chat").shadowRoot.querySelector(".status").textContent));
  assert.equal((await rendered(page)).length, waiting, "nothing was sent");
  assert.equal(await page.locator("#chat textarea").inputValue(), "confirmo", "the text stays for editing");
  await page.locator("#chat textarea").fill("");
  await press(page, "Confirmar");
  const all = await rendered(page);
  assert.match(all.at(-2).text, /confirmar$/);
  assert.match(all.at(-1).text, /^Assistente: Ação concluída\.\s*A sessão foi movida para o novo carro\./);
  assert.match(all.findLast((m) => m.kind === "proposal").text, /Confirmada e executada/);
  await type(page, "confirmar");
  assert.match((await last(page)).text, /Não há proposta aguardando confirmação/);
  await page.screenshot({ path: `${ARTIFACTS}/walkthrough-pt.png`, fullPage: true });
  await type(page, "mover ses_a2 para car_a1");
  await press(page, "Confirmar");
  // Issue 50: the demo's scripted model answers in the conversation's language.
  await type(page, "olá");
  assert.match((await last(page)).text, /Este é o assistente roteirizado offline/);
  await ctx.close();
});

test("model text: a safe markdown subset, built as elements; a javascript: link is never a link", async () => {
  const { ctx, page } = await person("?user=u_mallory");
  await type(page, "say **Bold** and *soft*, `code`, [docs](https://example.com/x) and [bad](javascript:alert(1))\n- one\n- two");
  const li = page.locator("#chat li.msg").last();
  assert.equal(await li.locator("strong").textContent(), "Bold");
  assert.equal(await li.locator("em").textContent(), "soft");
  assert.equal(await li.locator("code").textContent(), "code");
  assert.equal(await li.locator("ul > li").count(), 2);
  const links = await li.locator("a").evaluateAll((as) => as.map((a) => [a.getAttribute("href"), a.rel, a.target]));
  assert.deepEqual(links, [["https://example.com/x", "noopener noreferrer", "_blank"]]);
  assert.match(await li.textContent(), /\[bad\]\(javascript:alert\(1\)\)/);
  await ctx.close();
});

/** Sends `text` from the page and watches the conversation while the answer comes: when
 *  `first` (a text) first shows and whether the widget was still busy then, whether
 *  `last` had shown by then, and every draft text seen. */
function watchSend(page, text, first, last) {
  return page.evaluate(async ([text, first, last]) => {
    const root = document.querySelector("#chat").shadowRoot;
    const t0 = performance.now();
    const seen = { first: null, busyAtFirst: null, lastAtFirst: null, drafts: [] };
    const look = () => {
      const draft = root.querySelector("li.draft");
      if (draft) seen.drafts.push(draft.textContent);
      const shown = [...root.querySelectorAll("li.msg.assistant")].map((li) => li.textContent).join("\n");
      if (seen.first === null && shown.includes(first)) {
        seen.first = performance.now() - t0;
        seen.busyAtFirst = window.demo.widget.busy;
        seen.lastAtFirst = shown.includes(last);
      }
    };
    const observer = new MutationObserver(look);
    observer.observe(root, { subtree: true, childList: true, characterData: true });
    await window.demo.widget.send(text);
    observer.disconnect();
    look();
    seen.total = performance.now() - t0;
    return seen;
  }, [text, first, last]);
}

test("S-1: a streamed answer appears word by word before the turn ends (time to the first word, before and after)", async () => {
  // A model that writes a word every 50 ms for 3 s (the scripted model's `say slowly`).
  const words = Array.from({ length: 60 }, (_, i) => `w${i}x`).join(" ");
  const timings = {};
  for (const mode of ["buffered", "streamed"]) {
    const { ctx, page } = await person(mode === "buffered" ? "?stream=0" : "?user=u_bruno");
    const seen = await watchSend(page, `say slowly ${words}`, "w0x", "w59x");
    timings[mode] = seen;
    const all = await rendered(page);
    assert.match(all.at(-1).text, /w0x w1x .* w59x$/, "the stored answer is whole");
    assert.equal(all.filter((m) => m.role === "assistant" && m.text.includes("w59x")).length, 1, "shown once");
    if (mode === "streamed") {
      assert.equal(seen.busyAtFirst, true, "the first word showed while the turn ran");
      assert.equal(seen.lastAtFirst, false, "…before the last word was written");
      assert.ok(seen.drafts.length > 3, `the draft grew piece by piece (${seen.drafts.length} updates)`);
    } else {
      assert.equal(seen.lastAtFirst, true, "buffered: everything shows at once, at the end");
    }
    await ctx.close();
  }
  console.log(`S-1 time to the first visible word (3 s answer, a word every 50 ms): buffered ${Math.round(timings.buffered.first)} ms, streamed ${Math.round(timings.streamed.first)} ms; whole answer ${Math.round(timings.buffered.total)} / ${Math.round(timings.streamed.total)} ms`);
});

test("S-1: a proposal arrives whole, from the stored proposal, never as streamed text", async () => {
  const { ctx, page } = await person();
  const seen = await watchSend(page, "move ses_a2 to car_a3", "Move the session", "Move the session");
  assert.ok(seen.drafts.every((d) => !d.includes("Move the session")), JSON.stringify(seen.drafts));
  const proposal = await last(page);
  assert.equal(proposal.kind, "proposal");
  assert.match(proposal.text, /Move the session at Spa-Francorchamps/);
  await press(page, "Cancel");
  await ctx.close();
});

test("S-1: a stream cut mid-answer loses nothing: the widget reads back what was stored", async () => {
  const { ctx, page } = await person("?user=u_bruno&cut=1&poll=300");
  const words = Array.from({ length: 30 }, (_, i) => `c${i}y`).join(" ");
  await page.evaluate((t) => window.demo.widget.send(t), `say slowly ${words}`);
  await page.waitForFunction(() => [...document.querySelector("#chat").shadowRoot.querySelectorAll("li.msg.assistant:not(.draft)")]
    .some((li) => li.textContent.includes("c29y")), null, { timeout: 15000 });
  const all = await rendered(page);
  assert.equal(all.filter((m) => m.role === "user" && m.text.includes("say slowly")).length, 1, "the person's message once");
  assert.equal(all.filter((m) => m.role === "assistant" && m.text.includes("c29y")).length, 1, "the answer once");
  assert.equal(await page.locator("#chat li.draft").count(), 0, "no draft left behind");
  await ctx.close();
});

test("issue 50: the tenant's welcome: greeting, assistant's name and starters; a starter sends; gone after the first message", async () => {
  const { ctx, page } = await person("?user=u_bruno");
  const chat = page.locator("#chat");
  assert.equal(await chat.locator("h2").textContent(), "TrackShare support");
  assert.equal(await chat.locator("section.cs").getAttribute("lang"), "en");
  assert.match(await chat.locator(".welcome .greeting").textContent(), /I'm TrackShare's assistant/);
  assert.deepEqual(await chat.locator(".starters button").allTextContents(), ["Show my sessions", "Show my cars", "Move ses_a2 to car_a3"]);
  // The menu's button is not the bar's main control; Send is ready.
  assert.equal(await chat.getByRole("menuitem", { name: "End conversation" }).isVisible(), false);
  assert.equal(await chat.locator(".menu-button").getAttribute("aria-expanded"), "false");
  assert.equal(await chat.getByRole("button", { name: "Send" }).isEnabled(), true);
  await page.setViewportSize({ width: 390, height: 760 });
  await page.screenshot({ path: `${ARTIFACTS}/welcome-390.png` });
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `no sideways scroll at 390 px (${width})`);
  await page.setViewportSize({ width: 1280, height: 720 });
  await chat.getByRole("button", { name: "Show my cars" }).click();
  await page.waitForFunction(count, 1);
  await page.waitForFunction(() => !window.demo.widget.busy);
  const all = await rendered(page);
  assert.match(all[0].text, /Show my cars/);
  assert.match(all.at(-1).text, /car_/);
  assert.equal(await chat.locator(".welcome").count(), 0);
  // Restored after a reload (`?include=welcome`): the name stays, the welcome does not
  // come back over a conversation that has messages.
  await page.reload();
  await page.waitForFunction(() => window.demo && window.demo.ready === true);
  assert.equal(await chat.locator("h2").textContent(), "TrackShare support");
  assert.equal(await chat.locator(".welcome").count(), 0);
  await ctx.close();
});

for (const [lang, query, waitText, send, again] of [
  ["en", "", "try again in \\d+ s", "Send", "Try again"],
  ["pt", "&lang=pt-BR", "tentar novamente em \\d+ s", "Enviar", "Tentar novamente"],
]) test(`issue 50 (${lang}): a failed open says why, waits the Retry-After, then Try again opens it; Send is off meanwhile`, async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().includes("429")) consoleErrors.push(`${m.text()} @ ${page.url()}`);
  });
  let refused = 0;
  await page.route("**/api/cases", (route) => {
    if (route.request().method() === "POST" && refused === 0) {
      refused += 1;
      return route.fulfill({ status: 429, headers: { "Retry-After": "2", "content-type": "application/json", "access-control-allow-origin": "*", "access-control-expose-headers": "Retry-After" }, body: JSON.stringify({ error: { code: "RATE_LIMITED", message: "slow down" } }) });
    }
    return route.continue();
  });
  await page.goto(DEMO + "?user=u_bruno" + query);
  const chat = page.locator("#chat");
  await page.waitForFunction((text) => new RegExp(text).test(document.querySelector("#chat").shadowRoot.querySelector(".status").textContent), waitText);
  assert.equal(await chat.locator(".status").getAttribute("role"), "alert");
  assert.equal(await chat.getByRole("button", { name: send }).isDisabled(), true, "no conversation, no Send");
  const retry = chat.getByRole("button", { name: again });
  assert.equal(await retry.isDisabled(), true, "Try again waits the Retry-After");
  await page.waitForFunction(() => !document.querySelector("#chat").shadowRoot.querySelector(".status button.retry").disabled, null, { timeout: 5000 });
  await retry.click();
  await page.waitForFunction(() => window.demo.widget.caseId && !window.demo.widget.busy);
  assert.equal(await chat.getByRole("button", { name: send }).isEnabled(), true);
  assert.equal(refused, 1);
  await type(page, "show my cars");
  await ctx.close();
});

for (const [lang, query, offline] of [["en", "", "offline"], ["pt", "&lang=pt-BR", "sem conexão"]]) test(`issue 50 (${lang}): offline is said and the widget recovers when the browser is back online`, async () => {
  // A live check in flight when the browser goes offline fails, and Chromium logs it: an
  // error this test provokes on purpose (seen once in a clean-clone run).
  const { ctx, page } = await person("?user=u_bruno&poll=300" + query, "ERR_INTERNET_DISCONNECTED");
  const chat = page.locator("#chat");
  await ctx.setOffline(true);
  await page.waitForFunction((text) => document.querySelector("#chat").shadowRoot.querySelector(".status").textContent.includes(text), offline);
  await ctx.setOffline(false);
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelector(".status").textContent === "");
  await type(page, "show my cars");
  assert.match((await last(page)).text, /car_/);
  assert.equal(await chat.locator(".status").textContent(), "");
  await ctx.close();
});

test("issue 50: timestamps, numbered lists, instructions on their own lines, the box cleared on send, Cancel in the accent, the near-confirm hint", async () => {
  const { ctx, page } = await person("?user=u_mallory");
  const chat = page.locator("#chat");
  // The box empties the moment the message is sent, while the answer is still coming.
  await chat.locator("textarea").fill("say slowly 1. first\n2. second\n3. third");
  await chat.locator("textarea").press("Enter");
  await page.waitForFunction(() => window.demo.widget.busy);
  assert.equal(await chat.locator("textarea").inputValue(), "");
  await page.waitForFunction(() => !window.demo.widget.busy);
  const list = chat.locator("li.msg.md").last().locator("ol");
  assert.deepEqual(await list.locator("li").allTextContents(), ["first", "second", "third"]);
  assert.equal(await list.evaluate((o) => getComputedStyle(o).listStyleType), "decimal");
  // Every message has its time, in the person's clock.
  const all = await rendered(page);
  assert.ok(all.every((m) => m.time && !Number.isNaN(Date.parse(m.time))), JSON.stringify(all));
  assert.match(await chat.locator("li.msg time.at").last().textContent(), /^\d{1,2}:\d{2}/);
  await type(page, "move ses_m1 to car_m2");
  const card = chat.locator("li.proposal").last();
  assert.equal(await card.locator(".instructions").evaluate((e) => getComputedStyle(e).whiteSpace), "pre-line");
  const box = await card.locator(".instructions").boundingBox();
  assert.ok(box.height > 40, "the instructions take their own lines");
  const accent = await chat.evaluate((h) => getComputedStyle(h.shadowRoot.querySelector("section.cs")).getPropertyValue("--cs-accent").trim());
  assert.equal(accent, "#b4442b");
  assert.equal(await card.getByRole("button", { name: "Cancel" }).evaluate((b) => getComputedStyle(b).color), "rgb(180, 68, 43)");
  // Near the word: said before sending, nothing sent, the proposal still waits.
  const waiting = (await rendered(page)).length;
  for (const near of ["confirm.", "confirmed", "yes, confirm it"]) {
    await chat.locator("textarea").fill(near);
    await chat.locator("textarea").press("Enter");
    await page.waitForFunction(() => /send only the word “confirm”/.test(document.querySelector("#chat").shadowRoot.querySelector(".status").textContent));
    assert.equal((await rendered(page)).length, waiting, `${near}: nothing was sent`);
  }
  assert.equal((await last(page)).state, "pending_confirmation");
  // The word alone, in any case, answers at once with no hint.
  await chat.locator("textarea").fill("CONFIRM");
  await chat.locator("textarea").press("Enter");
  await page.waitForFunction(count, waiting);
  await page.waitForFunction(() => !window.demo.widget.busy);
  assert.match((await last(page)).text, /Action completed/);
  await type(page, "move ses_m1 to car_m1");
  await press(page, "Confirm");
  await ctx.close();
});

test("issue 50 in Portuguese: the menu asks before ending, the transcript stays, the times and the label of an app's proposal", async () => {
  const { ctx, page } = await person("?lang=pt-BR&poll=300");
  const chat = page.locator("#chat");
  const before = (await rendered(page)).length;
  const answer = await prepareThroughMcp(page);
  assert.equal(answer.result.structuredContent.data.status, "pending_confirmation", JSON.stringify(answer));
  await page.waitForFunction(count, before);
  assert.equal(await chat.locator("li.proposal").last().locator(".attribution").textContent(), "Preparada por um aplicativo que você conectou a esta conta");
  await press(page, "Confirmar");
  assert.match((await last(page)).text, /Ação concluída/);
  assert.match(await chat.locator("li.msg time.at").last().textContent(), /^\d{2}:\d{2}$/);
  await type(page, "mover ses_a2 para car_a1");
  await press(page, "Confirmar");
  const kept = (await rendered(page)).length;
  await chat.getByRole("button", { name: "Mais opções" }).click();
  await chat.getByRole("menuitem", { name: "Encerrar conversa" }).click();
  assert.match(await chat.locator(".ask-end").textContent(), /Encerrar esta conversa\?/);
  await chat.getByRole("button", { name: "Encerrar", exact: true }).click();
  await page.waitForFunction(() => window.demo.widget.ended === true && !window.demo.widget.busy);
  assert.equal((await rendered(page)).length, kept);
  assert.match(await chat.locator("li.ended").textContent(), /Esta conversa foi encerrada\./);
  await chat.getByRole("button", { name: "Começar uma nova conversa" }).click();
  await page.waitForFunction(() => window.demo.widget.caseId && !window.demo.widget.ended && !window.demo.widget.busy);
  assert.match(await chat.locator(".welcome .greeting").textContent(), /Sou o assistente da TrackShare/);
  await ctx.close();
});
