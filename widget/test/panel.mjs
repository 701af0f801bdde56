// U-1 … U-3, H-1, H-4: the /admin panel in a real headless Chromium, on the local run
// (the dev server with its demo tenant, already certified and enabled by the run
// command). Kept beside the widget's browser tests to share their pinned driver.
//
//   BASE_URL=http://127.0.0.1:8700 SITE_URL=http://127.0.0.1:8701/ ADMIN_KEY=tsk_… \
//     node --test test/panel.mjs
//
// Runs after the widget's tests: it changes the demo tenant's settings.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const BASE = process.env.BASE_URL || "http://127.0.0.1:8700";
const SITE = process.env.SITE_URL || "http://127.0.0.1:8701/";
const KEY = process.env.ADMIN_KEY;
const PROVIDER = process.env.PROVIDER_URL || "http://127.0.0.1:8790";
const ARTIFACTS = process.env.ARTIFACTS || "target/widget-artifacts";
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
let browser;
let ctx;
let page;
const consoleErrors = [];
// Statuses the tests provoke on purpose (the browser logs each as a console error).
const expected = [/status of 400/, /status of 401/, /status of 403/, /status of 404/, /status of 409/];

function watch(p) {
  p.on("console", (m) => {
    if (m.type() === "error" && !expected.some((e) => e.test(m.text()))) consoleErrors.push(`${m.text()} @ ${p.url()}`);
  });
  p.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
}

before(async () => {
  assert.ok(KEY && KEY.startsWith("tsk_"), "ADMIN_KEY is set");
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  // bypassCSP only so that the cross-site test can build its form on the demo site.
  ctx = await browser.newContext({ bypassCSP: true });
  page = await ctx.newPage();
  watch(page);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(consoleErrors, [], "no page logged an error");
});

const field = (name) => page.locator(`p.error[data-field="${name}"]`);

test("U-1: a wrong key is refused; the right one signs in; the key is not kept by the browser", async () => {
  const res = await page.goto(`${BASE}/admin`);
  assert.equal(res.status(), 200);
  assert.match(res.headers()["content-security-policy"], /script-src 'self'/);
  await page.fill("#key", "tsk_wrong");
  await page.click("button[type=submit]");
  assert.match(await page.locator("p.error").innerText(), /not valid/);
  await page.fill("#key", KEY);
  await Promise.all([page.waitForURL(`${BASE}/admin`), page.click("button[type=submit]")]);
  // Issue 50: the landing is the overview: where the tenant stands, and what its server
  // installs in one copyable block.
  assert.equal(await page.locator("h1").innerText(), "Overview");
  assert.match(await page.locator("#overviewActions").innerText(), /^On: people can countersign changes\.$/);
  assert.match(await page.locator("#overviewCertification").innerText(), /^Passed · /);
  const install = await page.locator("#installBlock").innerText();
  assert.match(install, /^issuer: https:\/\/\S+\naudience: http:\/\/127\.0\.0\.1:\d+\/mcp\njwks_url: http:\/\/127\.0\.0\.1:\d+\/\.well-known\/jwks\.json$/);
  const jwks = await fetch(install.split("jwks_url: ")[1]);
  assert.equal(jwks.status, 200, "the JWKS URL shown is the one that answers");
  // The header on one row at 1280 px.
  await page.setViewportSize({ width: 1280, height: 800 });
  const header = await page.locator("header").boundingBox();
  assert.ok(header.height < 70, `the header is one row at 1280 px (${header.height} px)`);
  await page.goto(`${BASE}/admin/mcp`);
  assert.equal(await page.locator("h1").innerText(), "Tenant MCP");
  const cookies = await ctx.cookies(BASE);
  assert.equal(cookies.length, 1);
  assert.equal(cookies[0].httpOnly, true);
  assert.equal(cookies[0].sameSite, "Strict");
  assert.ok(!cookies[0].value.includes("tsk_"), "the session id is not the key");
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
  assert.ok(!stored.includes("tsk_"), "nothing readable by script holds the key");
});

test("U-2: load tools, choose consultations (writes cannot be chosen), save", async () => {
  await page.goto(`${BASE}/admin/mcp`);
  await Promise.all([page.waitForURL(/tools=1/), page.click("#loadTools")]);
  assert.equal(await page.locator("#tool-get_user_cars").isChecked(), true);
  assert.equal(await page.locator("#tool-reassign_session_car").isDisabled(), true, "the direct write cannot be chosen");
  assert.equal(await page.locator("#tool-prepare_action").isDisabled(), true);
  assert.equal(await page.locator("#tool-get_matching_sessions").isChecked(), false);
  // S-2: a person has the chat open with a proposal waiting when the administrator saves.
  const person = await browser.newContext();
  const site = await person.newPage();
  watch(site);
  await site.goto(`${SITE}?poll=400`);
  await site.waitForFunction(() => window.demo && window.demo.ready === true);
  await site.locator("#chat textarea").fill("move ses_a2 to car_a3");
  await site.locator("#chat textarea").press("Enter");
  await site.waitForFunction(() => !window.demo.widget.busy && document.querySelector("#chat").shadowRoot.querySelector("li.proposal"));
  await page.uncheck("#tool-get_download_status");
  await page.uncheck("#enabled");
  await Promise.all([page.waitForURL(/done=saved/), page.click("#mcp button[type=submit]")]);
  assert.equal(await page.locator("p.notice").innerText(), "Saved.");
  // The open widget shows the invalidation without a reload, and the card says so.
  await site.waitForFunction(() => [...document.querySelector("#chat").shadowRoot.querySelectorAll("li.notice")]
    .some((li) => li.textContent.includes("no longer valid because the integration settings changed")), null, { timeout: 15000 });
  await site.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelector("li.proposal").dataset.state === "cancelled");
  assert.equal(await site.locator("#chat li.proposal button.answer:enabled").count(), 0);
  await person.close();
  assert.equal(await page.locator("#enabled").isChecked(), false);
  assert.ok(!(await page.locator("#allowedToolsText").inputValue()).includes("get_download_status"));
  // The key to install, ready to copy.
  assert.match(await page.locator("#publicKey").innerText(), /BEGIN PUBLIC KEY/);
  assert.ok((await page.locator("#keyId").innerText()).length > 20);
  // K-1: the published keys, as the JWKS lists them, with their status.
  const kid = await page.locator("#keyId").innerText();
  assert.equal(await page.locator(`#publishedKeys tr[data-kid="${kid}"] td.status`).innerText(), "active");
  const jwks = await (await fetch(`${BASE}/.well-known/jwks.json`)).json();
  const rows = await page.locator("#publishedKeys tbody tr").count();
  assert.equal(rows, jwks.keys.length);
  assert.ok(jwks.keys.some((k) => k.kid === kid));
  // An error from the API is shown next to the field it names.
  await page.fill("#serverUrl", "http://not-allowed.example.com/mcp");
  await page.click("#mcp button[type=submit]");
  assert.ok((await field("serverUrl").innerText()).length > 0, "the URL's error is next to it");
});

test("V-1: a tool that declares itself a write cannot be saved as a consultation", async () => {
  await page.goto(`${BASE}/admin/mcp`);
  const saved = await page.locator("#allowedToolsText").inputValue();
  // The demo's direct write (readOnlyHint false), typed in, with no operation of that name
  // (so only V-1's vetting of the server's live tools/list can refuse it).
  await page.fill("#allowedToolsText", `${saved}\nreassign_session_car`);
  await page.fill("#operations", "");
  await page.uncheck("#enabled");
  await page.click("#mcp button[type=submit]");
  const error = await field("allowedTools").innerText();
  assert.match(error, /reassign_session_car/);
  assert.match(error, /not declared read-only/);
  // Nothing was saved.
  await page.goto(`${BASE}/admin/mcp`);
  assert.equal(await page.locator("#allowedToolsText").inputValue(), saved);
});

test("V-2: a tool changed since approval is shown side by side and approved with a button", async () => {
  const control = (fault, on) => fetch(`${PROVIDER}/_demo/control`, {
    method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${process.env.PROVIDER_TOKEN}` }, body: JSON.stringify({ fault, on }),
  });
  assert.equal((await control("cars_description_changed", true)).status, 204);
  await page.goto(`${BASE}/admin/mcp`);
  const change = page.locator('#toolChanges [data-tool="get_user_cars"]');
  assert.equal(await change.count(), 1, "the changed tool is listed");
  assert.match(await change.locator("pre.live").innerText(), /everyone they race with/);
  assert.doesNotMatch(await change.locator("pre.approved").innerText(), /everyone they race with/);
  await Promise.all([page.waitForURL(/done=approved/), change.locator("button[type=submit]").click()]);
  assert.equal(await page.locator("#toolChanges").count(), 0, "approved: nothing left to approve");
  // Back to the original description: a change again, approved again.
  assert.equal((await control("cars_description_changed", false)).status, 204);
  await page.goto(`${BASE}/admin/mcp`);
  await Promise.all([page.waitForURL(/done=approved/), page.locator('#toolChanges [data-tool="get_user_cars"] button').click()]);
  assert.equal(await page.locator("#toolChanges").count(), 0);
});

test("H-1, H-4, V-3: run the certification from the panel (consent executes), then enable actions", async () => {
  // The form starts from each consultation's required arguments, not from `{}`.
  await page.goto(`${BASE}/admin/mcp`);
  const prefilled = JSON.parse(await page.locator("#samples").inputValue());
  assert.deepEqual(prefilled.get_session_laps, { sessionId: "" });
  assert.deepEqual(prefilled.get_user_cars, {});
  // Issue 50: each operation's sample starts from the schema the server gives it.
  assert.deepEqual(JSON.parse(await page.locator("#actionSamples").inputValue()), { reassign_session_car: { sessionId: "", carId: "" } });
  const fill = async (consent) => {
    await page.goto(`${BASE}/admin/mcp`);
    await page.fill("#testUser", "countersign-test:u_test");
    await page.fill("#samples", JSON.stringify({
      get_user_uploads: {}, get_upload_file_details: { uploadId: "up_t1" }, get_user_sessions: {},
      get_session_laps: { sessionId: "ses_t1" }, get_user_cars: {},
      get_error_diagnosis: { code: "E_TRUNCATED" },
    }));
    await page.fill("#secondTestUser", "countersign-test:u_test2");
    await page.fill("#personalConsultations", "get_upload_file_details, get_session_laps");
    await page.fill("#actionSamples", JSON.stringify({ reassign_session_car: { sessionId: "ses_t1", carId: "car_t2" } }));
    if (consent) await page.check("#consent");
    await Promise.all([page.waitForURL(`${BASE}/admin/certification`), page.click("#certification button[type=submit]")]);
  };
  // Without consent nothing is executed: the execution check is skipped, and the run does not pass.
  await fill(false);
  assert.notEqual(await page.locator("#verdict").innerText(), "passed");
  // Issue 50: a failed run on the saved settings says it failed, never "run it again"
  // as if the settings had changed; no Enable button.
  assert.doesNotMatch(await page.locator("p.verdict").innerText(), /does not cover/);
  assert.match(await page.locator("#runSummary").innerText(), /^(Failed|Did not pass): \d+ checks passed, \d+ failed, [1-9]\d* skipped\.$/);
  assert.equal(await page.getByRole("button", { name: "Enable actions now" }).count(), 0);
  assert.equal(await page.locator('tr[data-check="actions.execute.reassign_session_car"] td:nth-child(2)').innerText(), "skipped");
  assert.match(await page.locator('tr[data-check="actions.execute.reassign_session_car"]').innerText(), /did not consent/);
  await fill(true);
  assert.equal(await page.locator("#verdict").innerText(), "passed");
  assert.equal(await page.locator("tr.failed").count(), 0);
  // Issue 50: the run in one line, and one button to enable actions on what it covers.
  assert.match(await page.locator("#runSummary").innerText(), /^Passed: \d+ checks passed, 0 failed, \d+ skipped\.$/);
  assert.equal(await page.getByRole("button", { name: "Enable actions now" }).count(), 1);
  // Issue 50: the result is a page of its own: a reload shows it again and never re-runs
  // the certification (whose consented run executes a write).
  const executed = async () => (await (await fetch(`${PROVIDER}/_demo/stats`, {
    headers: { authorization: `Bearer ${process.env.PROVIDER_TOKEN}` },
  })).json()).stats.executions;
  const before = await executed();
  const reloaded = await page.reload();
  assert.equal(reloaded.status(), 200);
  assert.equal(await page.locator("#verdict").innerText(), "passed");
  assert.equal(await executed(), before, "a reload runs nothing");
  // Each check is said in words, not in requirement IDs.
  const table = await page.locator("#run table").innerText();
  assert.doesNotMatch(table, /\b[HVTA]-\d+\b/, "no rule IDs");
  assert.match(await page.locator('tr[data-check="proof.alg_none"]').innerText(), /no signature \(alg none\) is refused/);
  assert.equal(await page.locator('tr[data-check="proof.alg_none"] td:nth-child(2)').innerText(), "passed");
  await page.click("text=Back to the Tenant MCP settings");
  assert.equal(await page.locator("#enableBlocked").count(), 0, "nothing blocks enabling");
  // The last inputs are remembered in this browser.
  assert.equal(await page.locator("#testUser").inputValue(), "countersign-test:u_test");
  assert.equal(JSON.parse(await page.locator("#samples").inputValue()).get_session_laps.sessionId, "ses_t1");
  await page.goto(`${BASE}/admin/certification`);
  await Promise.all([page.waitForURL(/done=saved/), page.getByRole("button", { name: "Enable actions now" }).click()]);
  assert.equal(await page.locator("#enabled").isChecked(), true);
  assert.match(await page.locator("#serverUrl").inputValue(), /^http:\/\/127\.0\.0\.1:\d+\/mcp$/, "the rest of the settings kept");
  assert.equal(await page.locator("#operations").inputValue(), "reassign_session_car");
  await page.goto(`${BASE}/admin/certification`);
  assert.equal(await page.getByRole("button", { name: "Enable actions now" }).count(), 0, "on already: no button");
  await page.goto(`${BASE}/admin/mcp`);
  // H-4 in the panel: new operations with actions on are refused next to the field.
  await page.fill("#operations", "reassign_session_car, rename_car");
  await page.click("#mcp button[type=submit]");
  assert.match(await field("actionPolicy.enabled").innerText(), /certification/);
});

test("U-3: create a widget credential (secret shown once), replace and revoke it; a reload never re-submits", async () => {
  await page.goto(`${BASE}/admin/widgets`);
  const before = await page.locator("#credentials tbody tr").count();
  await page.fill("#origins", "https://shop.example.com");
  await Promise.all([page.waitForURL(/\/admin\/widgets\?created=wk_/), page.click("#createWidget button[type=submit]")]);
  const secret = await page.locator("#secretValue").innerText();
  assert.match(secret, /^wsk_/);
  assert.equal(await page.locator("#credentials tbody tr").count(), before + 1);
  // The form posted and redirected: a reload is a GET; it creates nothing and the secret
  // is not shown again.
  const reloaded = await page.reload();
  assert.equal(reloaded.request().method(), "GET");
  assert.equal(await page.locator("#credentials tbody tr").count(), before + 1, "no second credential");
  assert.ok(!(await page.content()).includes(secret), "the secret is shown only once");
  assert.match(await page.locator("p.notice").innerText(), /shown once/);
  const row = page.locator("#credentials tbody tr").last();
  const id = await row.getAttribute("data-key");
  // Replace: a server-rendered step first; cancelling changes nothing.
  await row.getByRole("link", { name: "Replace…" }).click();
  assert.equal(await page.locator("#confirmKey").innerText(), id);
  await page.getByRole("link", { name: "Cancel" }).click();
  assert.equal(await page.locator(`tr[data-key="${id}"]`).count(), 1, "cancel kept it");
  await page.locator(`tr[data-key="${id}"]`).getByRole("link", { name: "Replace…" }).click();
  // The old credential keeps working for a grace period the administrator chooses.
  assert.equal(await page.locator("#graceSeconds").inputValue(), "86400");
  await page.selectOption("#graceSeconds", "3600");
  await Promise.all([page.waitForURL(/created=wk_/), page.locator("#confirmForm button").click()]);
  assert.match(await page.locator("#secretValue").innerText(), /^wsk_/);
  const old = page.locator(`tr[data-key="${id}"]`);
  assert.match(await old.locator(".retiring").innerText(), /works until/, "the replaced one works for its grace period");
  assert.equal(await old.getByRole("link", { name: "Replace…" }).count(), 0, "replaced once");
  const newId = await page.locator("#credentials tbody tr").last().getAttribute("data-key");
  assert.notEqual(newId, id);
  const replaced = page.locator(`tr[data-key="${newId}"]`);
  assert.match(await replaced.innerText(), /https:\/\/shop\.example\.com/, "the origins carry over");
  for (const row of [replaced, old]) {
    await row.getByRole("link", { name: "Revoke…" }).click();
    assert.match(await page.locator("#consequence").innerText(), /stop working at once/);
    await Promise.all([page.waitForURL(`${BASE}/admin/widgets`), page.locator("#confirmForm button").click()]);
  }
  assert.equal(await page.locator("#credentials tbody tr").count(), before);
});

test("U-3: the audit trail shows the changes", async () => {
  await page.goto(`${BASE}/admin/audit`);
  const actions = await page.locator("#audit code.action").allInnerTexts();
  for (const a of ["widgetCredential.revoke", "widgetCredential.create", "mcp.certify", "mcp.put"]) {
    assert.ok(actions.includes(a), `${a} in ${actions}`);
  }
  // Readable: who in words, changes field by field, no raw JSON line.
  const who = await page.locator("#audit td.who").first().innerText();
  assert.match(who, /^(Administrator \(key [0-9a-f]{8}…\)|Platform operator|Platform|The person in the chat)$/);
  assert.ok((await page.locator("#audit ul.changes li").count()) > 0);
  // Filters: by event, and by day.
  await page.selectOption("#event", "widgetCredential.");
  await Promise.all([page.waitForURL(/event=widgetCredential/), page.click("#auditFilters button[type=submit]")]);
  const filtered = await page.locator("#audit code.action").allInnerTexts();
  assert.ok(filtered.length > 0 && filtered.every((a) => a.startsWith("widgetCredential.")), `${filtered}`);
  await page.goto(`${BASE}/admin/audit?from=2000-01-01&to=2000-01-02`);
  assert.equal(await page.locator("#audit tbody tr").count(), 0);
  assert.equal(await page.locator("#noRecords").count(), 1);
  // Fits 1280 px and a phone: no sideways scrolling.
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    await page.setViewportSize({ width, height });
    await page.goto(`${BASE}/admin/audit`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `${width} px: ${overflow} px of sideways scroll`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

test("Unsettled actions: the page lists none on a healthy provider", async () => {
  await page.goto(`${BASE}/admin/mcp`);
  await Promise.all([page.waitForURL(`${BASE}/admin/actions`), page.click("text=Unsettled actions")]);
  assert.equal(await page.locator("h1").innerText(), "Unsettled actions");
  assert.equal(await page.locator("#noUnsettled").count(), 1);
});

test("S-3: an uncertain action shows Check again, which asks its status and never executes again", async () => {
  const provider = (path, body) => fetch(`${PROVIDER}${path}`, {
    method: body ? "POST" : "GET", headers: { "content-type": "application/json", authorization: `Bearer ${process.env.PROVIDER_TOKEN}` }, body: body && JSON.stringify(body),
  });
  const executions = async () => (await (await provider("/_demo/stats")).json()).stats.executions;
  const person = await browser.newContext();
  const site = await person.newPage();
  watch(site);
  await site.goto(`${SITE}?poll=600000`);
  await site.waitForFunction(() => window.demo && window.demo.ready === true);
  const settle = () => site.waitForFunction(() => !window.demo.widget.busy);
  await site.evaluate(() => window.demo.widget.send("move ses_a2 to car_a3"));
  await settle();
  const before = await executions();
  // The provider carries it out, then the answer is lost: the outcome is uncertain.
  assert.equal((await provider("/_demo/control", { fault: "drop_after_execute", on: true })).status, 204);
  await site.locator("#chat li.proposal").last().getByRole("button", { name: "Confirm" }).click();
  await settle();
  assert.equal((await provider("/_demo/control", { fault: "drop_after_execute", on: false })).status, 204);
  const card = site.locator("#chat li.proposal").last();
  assert.equal(await card.getAttribute("data-state"), "unknown", await card.innerText());
  assert.match(await site.locator("#chat li.notice").last().innerText(), /uncertain/);
  const check = card.getByRole("button", { name: "Check again" });
  assert.equal(await check.isVisible(), true);
  await check.click();
  await settle();
  await site.waitForFunction(() => [...document.querySelector("#chat").shadowRoot.querySelectorAll("li.result")].some((li) => li.textContent.includes("Action completed")));
  assert.equal(await card.getAttribute("data-state"), "completed");
  assert.equal(await executions(), before + 1, "checking asked the status; it executed nothing again");
  // Put the car back for the later tests.
  await site.evaluate(() => window.demo.widget.send("move ses_a2 to car_a1"));
  await settle();
  await site.locator("#chat li.proposal").last().getByRole("button", { name: "Confirm" }).click();
  await settle();
  await person.close();
});

test("U-1: a cross-site form post is refused and changes nothing", async () => {
  const before = await page.goto(`${BASE}/admin/mcp`).then(() => page.locator("#enabled").isChecked());
  const other = await ctx.newPage();
  watch(other);
  await other.goto(SITE);
  const [res] = await Promise.all([
    other.waitForNavigation(),
    other.evaluate((target) => {
      const f = document.createElement("form");
      f.method = "post";
      f.action = target;
      for (const [k, v] of Object.entries({ serverUrl: "https://evil.example.com/mcp", allowedToolsText: "get_user_cars", operations: "", csrf: "forged" })) {
        const i = document.createElement("input");
        i.name = k;
        i.value = v;
        f.appendChild(i);
      }
      document.body.appendChild(f);
      f.submit();
    }, `${BASE}/admin/mcp`),
  ]);
  assert.equal(res.status(), 403);
  assert.match(await other.locator("p.error").innerText(), /refused/);
  await other.close();
  await page.goto(`${BASE}/admin/mcp`);
  assert.ok(!(await page.locator("#serverUrl").inputValue()).includes("evil"));
  assert.equal(await page.locator("#enabled").isChecked(), before);
});

test("S-4: the tenant's language, set in the panel, is the widget's and the platform's for new conversations", async () => {
  await page.goto(`${BASE}/admin/settings`);
  assert.equal(await page.locator("#language").inputValue(), "en");
  await page.selectOption("#language", "pt-BR");
  await Promise.all([page.waitForURL(/done=saved/), page.click("main button[type=submit]")]);
  assert.equal(await page.locator("p.notice").innerText(), "Saved.");
  // A reload of the confirmation page shows it again; it never posts again.
  const again = await page.reload();
  assert.equal(again.request().method(), "GET");
  assert.equal(await page.locator("#language").inputValue(), "pt-BR");
  try {
    const person = await browser.newContext();
    const site = await person.newPage();
    watch(site);
    await site.goto(SITE);
    await site.waitForFunction(() => window.demo && window.demo.ready === true);
    // The tenant's Portuguese assistant name (issue 50), the widget's own texts.
    assert.equal(await site.locator("#chat h2").textContent(), "Suporte TrackShare");
    assert.equal(await site.locator("#chat textarea").getAttribute("placeholder"), "Escreva uma mensagem");
    const chat = site.locator("#chat textarea");
    await chat.fill("mover ses_a2 para car_a3");
    await chat.press("Enter");
    await site.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelector("li.proposal"));
    assert.match(await site.locator("#chat li.proposal").textContent(), /responda: confirmar/);
    await site.locator("#chat li.proposal").getByRole("button", { name: "Cancelar" }).click();
    await site.waitForFunction(() => !window.demo.widget.busy);
    await person.close();
  } finally {
    await page.goto(`${BASE}/admin/settings`);
    await page.selectOption("#language", "en");
    await Promise.all([page.waitForURL(/done=saved/), page.click("main button[type=submit]")]);
  }
  await page.goto(`${BASE}/admin/audit`);
  assert.match(await page.locator("main").innerText(), /tenant\.language/);
});

test("every panel page has its icon: no request for /favicon.ico (it answered 401)", async () => {
  const asked = [];
  const onRequest = (r) => asked.push(r.url());
  page.on("request", onRequest);
  const icon = page.waitForResponse((r) => r.url().endsWith("/admin/static/favicon.svg"));
  await page.goto(`${BASE}/admin/settings`);
  assert.equal((await icon).status(), 200);
  await page.waitForTimeout(300);
  page.off("request", onRequest);
  assert.deepEqual(asked.filter((u) => u.includes("favicon.ico")), []);
});

test("S-4: the panel speaks Portuguese when the administrator chooses it, and remembers it", async () => {
  await page.goto(`${BASE}/admin/widgets`);
  assert.equal(await page.locator("html").getAttribute("lang"), "en");
  await Promise.all([page.waitForURL(`${BASE}/admin/widgets`), page.getByRole("link", { name: "Português" }).click()]);
  assert.equal(await page.locator("html").getAttribute("lang"), "pt-BR");
  const nav = await page.locator("header nav").innerText();
  for (const t of ["MCP do tenant", "Credenciais do widget", "Ações pendentes de resolução", "Trilha de auditoria", "Configurações"]) {
    assert.ok(nav.includes(t), `${t} in ${nav}`);
  }
  assert.equal(await page.locator("h1").innerText(), "Credenciais do widget");
  // Remembered: another page, a reload, a new tab of the same browser.
  await page.goto(`${BASE}/admin/settings`);
  assert.equal(await page.locator("h1").innerText(), "Configurações");
  await Promise.all([page.waitForURL(/done=saved/), page.click("main button[type=submit]")]);
  assert.equal(await page.locator("p.notice").innerText(), "Salvo.");
  const other = await page.context().newPage();
  watch(other);
  await other.goto(`${BASE}/admin/audit`);
  assert.equal(await other.locator("h1").innerText(), "Trilha de auditoria");
  assert.match(await other.locator("#audit td.who").first().innerText(), /^(Administrador \(chave [0-9a-f]{8}…\)|Operador da plataforma|Plataforma|A pessoa no chat)$/);
  await other.close();
  // Issue 50: the certification's summary and the tools' block reasons in Portuguese.
  await page.goto(`${BASE}/admin/certification`);
  assert.match(await page.locator("#runSummary").innerText(), /^Passou: \d+ verificações passaram, 0 falharam, 0 foram puladas\.$/);
  // …and what it saw, check by check (English stays the API's).
  assert.match(await page.locator('tr[data-check="tools.list"] td').nth(2).innerText(), /^tools\/list respondeu com \d+ ferramentas$/);
  const saw = await page.locator("#run tbody td:nth-child(3)").allInnerTexts();
  assert.ok(saw.length > 10, `${saw}`);
  assert.ok(saw.every((r) => !/\b(was|were|answered|refused|with|the)\b/.test(r.replace(/"[^"]*"|`[^`]*`/g, ""))), `${saw.join("\n")}`);
  // "Enable actions now" in Portuguese: actions switched off, the run still covers the
  // saved settings, one button turns them back on.
  await page.goto(`${BASE}/admin/mcp`);
  await page.uncheck("#enabled");
  await Promise.all([page.waitForURL(/done=saved/), page.click("#mcp button[type=submit]:not([name=intent])")]);
  await page.goto(`${BASE}/admin/certification`);
  await Promise.all([page.waitForURL(/done=saved/), page.getByRole("button", { name: "Ativar as ações agora" }).click()]);
  assert.equal(await page.locator("p.notice").innerText(), "Salvo.");
  assert.equal(await page.locator("#enabled").isChecked(), true);
  await page.goto(`${BASE}/admin/mcp?tools=1`);
  const blocked = await page.locator(".tool .blocked").allInnerTexts();
  assert.ok(blocked.some((b) => /não pode ser uma consulta$/.test(b)), `${blocked}`);
  assert.ok(blocked.every((b) => !/cannot be a consultation/.test(b)), `${blocked}`);
  // Issue 50: the overview and the erasure's question in Portuguese.
  await page.goto(`${BASE}/admin`);
  assert.equal(await page.locator("h1").innerText(), "Visão geral");
  assert.match(await page.locator("#overviewCertification").innerText(), /^(Passou|Falhou|Ainda não executada)/);
  await page.goto(`${BASE}/admin/retention`);
  await page.fill("#person", "u_never_seen_pt");
  await page.click("#erasePerson button[type=submit]");
  assert.match(await page.locator("#confirmErasureText").innerText(), /^Apagar u_never_seen_pt\? Isto não pode ser desfeito/);
  await Promise.all([page.waitForURL(`${BASE}/admin/retention`), page.getByRole("link", { name: "Manter a pessoa" }).click()]);
  // A refusal in Portuguese, beside what caused it.
  await page.goto(`${BASE}/admin/widgets`);
  await page.fill("#origins", "ftp://shop.example.com");
  await page.click("#createWidget button[type=submit]");
  assert.ok(await page.locator('p.error[data-field^="allowedOrigins"]').count() > 0);
  assert.equal(await page.locator("h1").innerText(), "Credenciais do widget");
  // And back to English, from the page itself.
  await Promise.all([page.waitForURL(`${BASE}/admin/widgets`), page.getByRole("link", { name: "English" }).click()]);
  assert.equal(await page.locator("h1").innerText(), "Widget credentials");
  assert.equal(await page.locator("html").getAttribute("lang"), "en");
});

test("issue 50: the accent and the welcome, set in the panel in both languages; a refusal is shown under its field in the administrator's language", async () => {
  await page.goto(`${BASE}/admin/settings`);
  const original = {};
  for (const id of ["accent", "welcome.en.greeting", "welcome.en.starter4", "welcome.pt.greeting"]) {
    original[id] = await page.locator(`[id="${id}"]`).inputValue();
  }
  try {
    // Refused in English, then in Portuguese, each beside its field; nothing saved.
    await page.fill("#accent", "#ffff00");
    await page.click("main button[type=submit]");
    assert.match(await field("accent").innerText(), /Choose a darker accent/);
    await Promise.all([page.waitForURL(`${BASE}/admin/settings`), page.getByRole("link", { name: "Português" }).click()]);
    await page.fill("#accent", "#ffff00");
    await page.fill('[id="welcome.pt.greeting"]', "");
    await page.fill('[id="welcome.pt.assistantName"]', "Ana");
    await page.click("main button[type=submit]");
    assert.match(await field("accent").innerText(), /Escolha uma cor de destaque mais escura/);
    assert.equal(await page.locator("#accent").inputValue(), "#ffff00", "what was typed stays to be corrected");
    assert.equal(await page.locator('[id="welcome.pt.assistantName"]').inputValue(), "Ana");
    await page.setViewportSize({ width: 390, height: 900 });
    await field("accent").scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${ARTIFACTS}/panel-refusal-pt-390.png` });
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.fill("#accent", "#0b5d3b");
    await page.fill('[id="welcome.pt.greeting"]', "");
    await page.fill('[id="welcome.pt.assistantName"]', "Ana");
    await page.click("main button[type=submit]");
    assert.match(await field("welcome.pt.greeting").innerText(), /Escreva uma saudação de 1 a 300 caracteres/);
    await Promise.all([page.waitForURL(`${BASE}/admin/settings`), page.getByRole("link", { name: "English" }).click()]);
    assert.equal(await page.locator("#accent").inputValue(), original.accent, "a refused form saved nothing");
    // Saved: the widget of a page without its own accent takes the tenant's.
    await page.fill("#accent", "#0b5d3b");
    await page.fill('[id="welcome.en.greeting"]', "Welcome to TrackShare, tested.");
    await page.fill('[id="welcome.en.starter4"]', "operations");
    await Promise.all([page.waitForURL(/done=saved/), page.click("main button[type=submit]")]);
    assert.equal(await page.locator("#accent").inputValue(), "#0b5d3b");
    const person = await browser.newContext();
    const site = await person.newPage();
    watch(site);
    await site.goto(`${SITE}?theme=tenant&user=u_bruno`);
    await site.waitForFunction(() => window.demo && window.demo.ready === true);
    assert.equal(await site.locator("#chat .welcome .greeting").textContent(), "Welcome to TrackShare, tested.");
    assert.deepEqual(await site.locator("#chat .starters button").allTextContents(), ["Show my sessions", "Show my cars", "Move ses_a2 to car_a3", "operations"]);
    assert.equal(await site.locator("#chat header").evaluate((h) => getComputedStyle(h).backgroundColor), "rgb(11, 93, 59)");
    await person.close();
  } finally {
    await page.goto(`${BASE}/admin/settings`);
    for (const [id, value] of Object.entries(original)) await page.fill(`[id="${id}"]`, value);
    await Promise.all([page.waitForURL(/done=saved/), page.click("main button[type=submit]")]);
  }
  await page.goto(`${BASE}/admin/audit`);
  assert.match(await page.locator("main").innerText(), /tenant\.appearance/);
});

/** N-3: reloads the erasure's page until its job is done (the worker runs each second). */
async function untilDone() {
  for (let i = 0; i < 60; i++) {
    if ((await page.locator("#erasureStatus code").innerText()) === "done") return;
    await page.waitForTimeout(500);
    await page.reload();
  }
  assert.fail("the erasure job never finished");
}

test("R-3, R-2: a hold is placed, shown and lifted; a held person is not erased; an erasure shows its receipt", async () => {
  await page.goto(`${BASE}/admin/retention`);
  assert.equal(await page.locator("h1").innerText(), "Holds and erasure");
  assert.equal(await page.locator("#noHolds").count(), 1);
  await page.selectOption("#holdKind", "person");
  await page.fill("#holdId", "u_alice");
  await Promise.all([page.waitForURL(/done=saved/), page.click("#placeHold button[type=submit]")]);
  assert.equal(await page.locator('li.hold[data-kind="person"][data-id="u_alice"]').count(), 1);
  // A held person is refused, beside the field, and nothing is erased.
  await page.fill("#person", "u_alice");
  await page.click("#erasePerson button[type=submit]");
  assert.match(await field("person").innerText(), /legal hold/);
  assert.equal(await page.locator("#erasure").count(), 0);
  // A malformed id is refused; an unknown person is told so.
  await page.selectOption("#holdKind", "conversation");
  await page.fill("#holdId", "not-a-case");
  await page.click("#placeHold button[type=submit]");
  assert.ok((await field("id").count()) > 0);
  // N-3: an erasure is queued, then carried out by the worker; its page reads the job
  // (a reload never asks again). An unknown person's job ends with nothing written.
  // Issue 50: an erasure asks first, in red; "Keep them" erases nothing.
  await page.fill("#person", "u_never_seen");
  await page.click("#erasePerson button[type=submit]");
  assert.match(await page.locator("#confirmErasureText").innerText(), /Erase u_never_seen\? This cannot be undone/);
  assert.equal(await page.locator("#confirmErasure button.danger").evaluate((b) => getComputedStyle(b).backgroundColor), "rgb(180, 35, 24)");
  await Promise.all([page.waitForURL(`${BASE}/admin/retention`), page.getByRole("link", { name: "Keep them" }).click()]);
  assert.equal(await page.locator("#erasure").count(), 0);
  await page.fill("#person", "u_never_seen");
  await page.click("#erasePerson button[type=submit]");
  await Promise.all([page.waitForURL(/\/admin\/erasure\/aud_/), page.getByRole("button", { name: "Erase this person" }).click()]);
  await untilDone();
  assert.match(await page.locator("#erasureNothing").innerText(), /Nothing is stored/);
  // Lifted, then erased: the answer and its signed receipt, once.
  await page.goto(`${BASE}/admin/retention`);
  await Promise.all([page.waitForURL(/done=saved/), page.locator('li.hold[data-id="u_alice"]').getByRole("button", { name: "Lift" }).click()]);
  assert.equal(await page.locator("#noHolds").count(), 1);
  await page.fill("#person", "u_alice");
  await page.click("#erasePerson button[type=submit]");
  await Promise.all([page.waitForURL(/\/admin\/erasure\/aud_/), page.getByRole("button", { name: "Erase this person" }).click()]);
  await untilDone();
  assert.match(await page.locator("#auditPersonal").innerText(), /^(unreadable|pending)/);
  const receipt = await page.locator("#receipt").inputValue();
  assert.match(receipt, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  // The receipt comes first on the page, with Copy and Download (the same JWS).
  const [top, holds] = await Promise.all([page.locator("#erasure").boundingBox(), page.locator("#holds-help").boundingBox()]);
  assert.ok(top.y < holds.y, "the erasure's answer is above the holds");
  const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#downloadReceipt").click()]);
  assert.match(download.suggestedFilename(), /^erasure-receipt-aud_\w+\.jws$/);
  const fs = await import("node:fs/promises");
  assert.equal(await fs.readFile(await download.path(), "utf8"), receipt);
  await page.goto(`${BASE}/admin/audit`);
  const trail = await page.locator("main").innerText();
  for (const a of ["hold.placed", "hold.lifted", "subject.erased"]) assert.ok(trail.includes(a), `${a} in the trail`);
});

test("issue 50: every panel page fits a 390 px phone: no sideways scroll (wide tables scroll inside themselves)", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    for (const path of ["/admin", "/admin/mcp", "/admin/widgets", "/admin/actions", "/admin/audit", "/admin/settings", "/admin/retention", "/admin/certification"]) {
      await page.goto(`${BASE}${path}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 1, `${path}: ${overflow} px of sideways scroll at 390 px`);
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});

test("U-1: sign out ends the session", async () => {
  await page.goto(`${BASE}/admin/mcp`);
  await Promise.all([page.waitForURL(`${BASE}/admin`), page.click("header form button")]);
  await page.goto(`${BASE}/admin/mcp`);
  assert.equal(page.url(), `${BASE}/admin`);
  assert.equal(await page.locator("h1").innerText(), "Sign in");
});
