// B-1, B-5 in a real browser: τ²-bench's retail server (a support system nobody here
// wrote) behind countersign-bridge, connected by the tenant administrator through the
// panel — settings, the certification with consent (a dry run for its synthetic
// people), actions on — then a customer of that system cancels an order in the widget,
// in Portuguese: the bridge's summary comes in the person's language (X-MCP-Language),
// and the order is cancelled in the server's own database only after Confirmar.
//
//   BASE_URL=… SITE_URL=… ADMIN_KEY=tsk_… BRIDGE_URL=http://127.0.0.1:P/mcp \
//     BRIDGE_TOKEN=… BRIDGE_STATE=<the retail server's state file> node --test test/bridge.mjs
//
// Runs after the panel's tests (it replaces the demo tenant's server with the bridge).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const BASE = process.env.BASE_URL;
const SITE = process.env.SITE_URL;
const KEY = process.env.ADMIN_KEY;
const BRIDGE = process.env.BRIDGE_URL;
const TOKEN = process.env.BRIDGE_TOKEN;
const STATE = process.env.BRIDGE_STATE;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const PERSON = "ivan_santos_6635";
const ORDER = "#W8770097";
const WRITES = [
  "cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
  "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
  "return_delivered_order_items",
];
const CONSULTATIONS = [
  "get_order_details", "get_user_details", "find_user_id_by_email", "find_user_id_by_name_zip",
  "get_product_details", "get_item_details", "list_all_product_types", "calculate",
];
let browser;
const consoleErrors = [];

function watch(p) {
  p.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(`${m.text()} @ ${p.url()}`);
  });
  p.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
}

before(async () => {
  for (const [name, v] of Object.entries({ BASE, SITE, KEY, BRIDGE, TOKEN, STATE })) assert.ok(v, `${name} is set`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  assert.deepEqual(consoleErrors, [], "no page logged an error");
});

/** The order as the retail server's own database holds it. */
function order(id) {
  return JSON.parse(readFileSync(STATE, "utf8")).db.orders[id];
}

test("B-1, B-5: the administrator connects the bridged retail server, certifies it with consent, and turns actions on", async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  watch(page);
  await page.goto(`${BASE}/admin`);
  await page.fill("#key", KEY);
  await Promise.all([page.waitForURL(`${BASE}/admin`), page.click("button[type=submit]")]);
  // Issue 50: a new server's tools load before the first save, from the URL and token
  // typed, in the administrator's language; nothing is saved by loading them. (The demo
  // server is removed first: a tenant that has no server yet.)
  await page.goto(`${BASE}/admin/mcp`);
  await page.check("#confirmRemove");
  await Promise.all([page.waitForURL(/done=removed/), page.click("#remove button[type=submit]")]);
  for (const [lang, button, loaded] of [
    ["English", "Load tools from your server", "Your server's tools are loaded: choose the consultations, then save."],
    ["Português", "Carregar as ferramentas do seu servidor", "As ferramentas do seu servidor foram carregadas: escolha as consultas e salve."],
  ]) {
    await page.goto(`${BASE}/admin/mcp`);
    if (await page.getByRole("link", { name: lang, exact: true }).count()) {
      await Promise.all([page.waitForURL(`${BASE}/admin/mcp`), page.getByRole("link", { name: lang, exact: true }).click()]);
    }
    await page.fill("#serverUrl", BRIDGE);
    await page.fill("#serviceToken", TOKEN);
    await page.fill("#operations", WRITES.join(", "));
    await page.getByRole("button", { name: button }).click();
    await page.waitForSelector(`#tool-${CONSULTATIONS[0]}`);
    assert.equal(await page.locator("p.notice").innerText(), loaded);
    for (const t of CONSULTATIONS) assert.equal(await page.locator(`#tool-${t}`).count(), 1, `${t} offered`);
    for (const t of WRITES) assert.equal(await page.locator(`#tool-${t}`).count(), 0, `${t} is not offered`);
    await page.goto(`${BASE}/admin/mcp`);
    assert.equal(await page.getByRole("button", { name: button }).count(), 1, "nothing was saved");
  }
  await Promise.all([page.waitForURL(`${BASE}/admin/mcp`), page.getByRole("link", { name: "English", exact: true }).click()]);
  // The bridge as the tenant's server: its consultations typed in (V-1 vets them against
  // the bridge's live tools/list, where they are read-only on the tenant's word), its
  // operations, actions off until certified.
  await page.fill("#serverUrl", BRIDGE);
  await page.fill("#serviceToken", TOKEN);
  await page.fill("#audience", "");
  await page.fill("#allowedToolsText", CONSULTATIONS.join("\n"));
  await page.fill("#operations", WRITES.join(", "));
  await page.uncheck("#enabled");
  // Save, not the preview's Load button (a first save has both).
  await Promise.all([page.waitForURL(/done=saved/), page.click("#mcp button[type=submit]:not([name=intent])")]);
  // The loaded tools: every consultation chosen, none of the server's writes offered.
  await Promise.all([page.waitForURL(/tools=1/), page.click("#loadTools")]);
  for (const t of CONSULTATIONS) assert.equal(await page.locator(`#tool-${t}`).isChecked(), true, t);
  for (const t of WRITES) assert.equal(await page.locator(`#tool-${t}`).count(), 0, `${t} is not offered`);
  // The certification, with consent: the synthetic people act as two of the server's
  // customers (the bridge's [certification]); its writes are a dry run there.
  await page.goto(`${BASE}/admin/mcp`);
  await page.fill("#testUser", "countersign-test:u_test");
  await page.fill("#secondTestUser", "countersign-test:u_test2");
  await page.fill("#samples", JSON.stringify({
    get_order_details: { order_id: ORDER }, get_user_details: { user_id: PERSON },
    find_user_id_by_email: { email: "ivan.santos3158@example.com" },
    find_user_id_by_name_zip: { first_name: "Ivan", last_name: "Santos", zip: "75277" },
    get_product_details: { product_id: "4794339885" }, get_item_details: { item_id: "4274709903" },
    list_all_product_types: {}, calculate: { expression: "2 + 2" },
  }));
  await page.fill("#personalConsultations", "get_order_details, get_user_details, find_user_id_by_email");
  const address = { address1: "1 Main St", address2: "", city: "Dallas", state: "TX", zip: "75277", country: "USA" };
  await page.fill("#actionSamples", JSON.stringify({
    cancel_pending_order: { order_id: ORDER, reason: "no longer needed" },
    modify_pending_order_address: { order_id: ORDER, ...address },
    modify_pending_order_items: { order_id: ORDER, item_ids: ["4274709903"], new_item_ids: ["4274709903"], payment_method_id: "paypal_6151711" },
    modify_pending_order_payment: { order_id: ORDER, payment_method_id: "paypal_6151711" },
    return_delivered_order_items: { order_id: "#W6893533", item_ids: ["5206946487"], payment_method_id: "paypal_6151711" },
    exchange_delivered_order_items: { order_id: "#W6893533", item_ids: ["5206946487"], new_item_ids: ["5206946487"], payment_method_id: "paypal_6151711" },
    modify_user_address: address,
  }));
  await page.check("#consent");
  await Promise.all([page.waitForURL(`${BASE}/admin/certification`), page.click("#certification button[type=submit]")]);
  const failed = await page.locator("tr.failed").allInnerTexts();
  assert.equal(await page.locator("#verdict").innerText(), "passed", failed.join("\n"));
  // The dry run executed nothing in the server's database.
  assert.equal(order(ORDER).status, "pending");
  await page.click("text=Back to the Tenant MCP settings");
  await page.check("#enabled");
  await Promise.all([page.waitForURL(/done=saved/), page.click("#mcp button[type=submit]")]);
  assert.equal(await page.locator("#enabled").isChecked(), true);
  await ctx.close();
});

test("B-2, B-3, B-5: a customer cancels an order in the widget in Portuguese; it is cancelled upstream only after Confirmar", async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  watch(page);
  await page.goto(`${SITE}?user=${PERSON}&lang=pt-BR`);
  await page.waitForFunction(() => window.demo && window.demo.ready === true && window.demo.widget.caseId);
  const proposals = () => page.locator("#chat li.proposal");
  const input = page.locator("#chat textarea");
  // The offline scripted model prepares exactly this (as a model would from the chat).
  await input.fill(`call prepare_action ${JSON.stringify({ operation: "cancel_pending_order", arguments: { order_id: ORDER, reason: "no longer needed" } })}`);
  await input.press("Enter");
  await page.waitForFunction(() => !window.demo.widget.busy && document.querySelector("#chat").shadowRoot.querySelector("li.proposal"));
  const text = await proposals().last().innerText();
  // The bridge's Portuguese template, with the order's items looked up upstream.
  assert.match(text, /Cancelar o pedido #W8770097 \(.+\); motivo: no longer needed\. O pagamento é estornado\./);
  assert.equal(order(ORDER).status, "pending", "nothing happens before the person confirms");
  await proposals().last().locator("button.primary.answer").click();
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelector("li.proposal").dataset.state === "completed", null, { timeout: 20000 });
  assert.equal(order(ORDER).status, "cancelled", "cancelled in the server's own database");
  await ctx.close();
});

test("B-2: another customer can neither read that order nor have it changed", async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  watch(page);
  await page.goto(`${SITE}?user=yusuf_rossi_9620`);
  await page.waitForFunction(() => window.demo && window.demo.ready === true && window.demo.widget.caseId);
  const input = page.locator("#chat textarea");
  const say = async (text) => {
    const before = await page.locator("#chat li.msg").count();
    await input.fill(text);
    await input.press("Enter");
    await page.waitForFunction((n) => !window.demo.widget.busy
      && document.querySelector("#chat").shadowRoot.querySelectorAll("li.msg:not(.sending):not(.draft)").length >= n + 2, before);
    return page.locator("#chat li.msg").last().innerText();
  };
  const read = await say(`call get_order_details ${JSON.stringify({ order_id: ORDER })}`);
  assert.match(read, /not found/, "the bridge's guard refuses, as if the order did not exist");
  assert.doesNotMatch(read, /ivan|santos|cancelled|payment_history/i, read);
  const write = await say(`call prepare_action ${JSON.stringify({ operation: "modify_pending_order_payment", arguments: { order_id: ORDER, payment_method_id: "paypal_6151711" } })}`);
  assert.doesNotMatch(write, /ivan|santos/i, write);
  assert.equal(await page.locator("#chat li.proposal").count(), 0, "no proposal for another's order");
  await ctx.close();
});
