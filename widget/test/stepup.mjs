// F-1 … F-7: the passkey step-up in a real headless Chromium with a virtual authenticator
// (CDP `WebAuthn.addVirtualAuthenticator`, user verification on). Two hosts: the tenant's
// site (127.0.0.1, where no passkey ceremony can ever run: an IP address is no RP ID) and
// the platform's confirmation page (localhost, the RP ID). The demo provider verifies each
// step-up with the provider kit and requires one for `reassign_session_car`.
//
//   BASE_URL=http://127.0.0.1:8700 SITE_URL=http://127.0.0.1:8701/ ADMIN_KEY=tsk_… TENANT=ten_… \
//     PROVIDER_URL=http://127.0.0.1:8790 PROVIDER_TOKEN=svc_… node --test test/stepup.mjs
//
// Runs after the panel's tests and puts the demo tenant's settings back at the end.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { generateKeyPairSync, randomBytes } from "node:crypto";

const BASE = process.env.BASE_URL || "http://127.0.0.1:8700";
const SITE = process.env.SITE_URL || "http://127.0.0.1:8701/";
const KEY = process.env.ADMIN_KEY;
const TENANT = process.env.TENANT;
const PROVIDER = process.env.PROVIDER_URL || "http://127.0.0.1:8790";
const PROVIDER_TOKEN = process.env.PROVIDER_TOKEN;
const ARTIFACTS = process.env.ARTIFACTS || "target/widget-artifacts";
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const OPERATION = "reassign_session_car";
let browser;
let ctx;
let widget;
// The passkey enrolled in the page's authenticator (its private key included), carried to
// the next tab's authenticator as a synced passkey would be.
let enrolled = [];
const consoleErrors = [];
// Statuses provoked on purpose (the browser logs each as a console error).
const expected = [/status of 409/, /status of 400 \(Bad Request\) @ .*\/admin\/mcp$/];

function watch(p) {
  p.on("console", (m) => {
    const line = `${m.text()} @ ${p.url()}`;
    if (m.type() === "error" && !expected.some((e) => e.test(line))) consoleErrors.push(line);
  });
  p.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
}

async function admin(method, path, body) {
  const res = await fetch(`${BASE}/api/admin/tenants/${TENANT}/${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function provider(path, body) {
  const res = await fetch(`${PROVIDER}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${PROVIDER_TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.status === 204 ? null : res.json();
}

const stats = async () => (await provider("/_demo/stats")).stats;

/** The demo tenant's saved action policy, as the API shows it. */
async function policyNow() {
  const r = await admin("GET", "mcp");
  return r.body.actionPolicy;
}

/** The demo tenant's saved settings with `reassign_session_car`'s step-up set to `stepUp`. */
async function policy(stepUp) {
  const { body: view } = await admin("GET", "mcp");
  const config = {
    serverUrl: view.serverUrl,
    serviceToken: PROVIDER_TOKEN,
    allowedTools: view.allowedTools,
    actionPolicy: { contractVersion: 1, enabled: true, operations: view.actionPolicy.operations, stepUp: { [OPERATION]: stepUp } },
  };
  return admin("PUT", "mcp", config);
}

before(async () => {
  assert.ok(KEY && TENANT && PROVIDER_TOKEN, "ADMIN_KEY, TENANT and PROVIDER_TOKEN are set");
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  ctx = await browser.newContext();
  ctx.on("page", watch);
  widget = await ctx.newPage();
  await widget.goto(`${SITE}?poll=300`);
  await widget.waitForFunction(() => window.demo && window.demo.ready === true);
});

after(async () => {
  // Back as the other suites expect it: no step-up required anywhere.
  await policy("none");
  await provider("/_demo/control", { fault: "require_step_up", on: false });
  await browser?.close();
  assert.deepEqual(consoleErrors, [], "no page logged an error");
});

/** The credentials of the last test's authenticator (the person's passkey). */
let kept = [];

const card = () => widget.locator("#chat li.proposal").last();

async function propose(text) {
  const before = await widget.locator("#chat li.proposal").count();
  await widget.locator("#chat textarea").fill(text);
  await widget.locator("#chat textarea").press("Enter");
  await widget.waitForFunction((n) => document.querySelector("#chat").shadowRoot.querySelectorAll("li.proposal").length > n, before);
  await widget.waitForFunction(() => !window.demo.widget.busy);
  await card().locator(".passkey-note").waitFor();
}

/** Presses the card's "Confirm with your passkey": the platform's page, in a new tab, with
 *  a virtual authenticator attached to it. */
async function openPage(authenticator) {
  const [tab] = await Promise.all([ctx.waitForEvent("page"), card().getByRole("button", { name: "Confirm with your passkey" }).click()]);
  await tab.waitForURL(/\/confirm\//);
  return attach(tab, authenticator);
}

/** A virtual authenticator (user verification on) attached to `tab`, holding `authenticator`'s credentials. */
async function attach(tab, authenticator) {
  const cdp = await ctx.newCDPSession(tab);
  await cdp.send("WebAuthn.enable");
  const options = { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true };
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", { options });
  for (const credential of authenticator?.credentials || []) {
    await cdp.send("WebAuthn.addCredential", { authenticatorId, credential });
  }
  return { tab, cdp, authenticatorId };
}

/** Signs in through the tenant's sign-in (the demo site signs the demo person in). */
async function signIn(tab) {
  await tab.locator("#sign-in").click();
  await tab.locator("#summary").waitFor();
}

test("F-4, F-6: after a step-up certification the operation is set to passkey", async () => {
  await provider("/_demo/control", { fault: "require_step_up" });
  // Sample arguments for the consultations the tenant allows now (the panel's tests
  // changed them).
  const samples = {
    get_user_uploads: {}, get_upload_file_details: { uploadId: "up_t1" }, get_user_sessions: {},
    get_session_laps: { sessionId: "ses_t1" }, get_user_cars: {}, get_download_status: {}, get_error_diagnosis: { code: "E_TRUNCATED" },
  };
  const { body: current } = await admin("GET", "mcp");
  const allowed = current.allowedTools.filter((t) => t in samples);
  const personal = ["get_upload_file_details", "get_session_laps"].filter((t) => allowed.includes(t));
  const body = {
    testUser: "countersign-test:u_test",
    ...(personal.length ? { secondTestUser: "countersign-test:u_test2", personalConsultations: personal } : {}),
    consultations: Object.fromEntries(allowed.map((t) => [t, samples[t]])),
    actions: { [OPERATION]: { sessionId: "ses_t1", carId: "car_t2" } },
    consent: true,
    stepUp: [OPERATION],
  };
  const run = await admin("POST", "mcp/certifications", body);
  assert.equal(run.status, 201, JSON.stringify(run.body));
  assert.equal(run.body.passed, true, JSON.stringify(run.body.checks.filter((c) => c.status !== "passed")));
  const saved = await policy("passkey");
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  assert.equal(saved.body.actionPolicy.stepUp[OPERATION], "passkey");
  assert.equal(saved.body.actionVerification.stepUpRpId, "localhost");
});

test("F-1, F-3: the card says a passkey is needed before anything is typed; a typed confirm is refused and the proposal waits", async () => {
  await propose("move ses_a2 to car_a3");
  const c = card();
  assert.match(await c.locator(".passkey-note").textContent(), /needs your passkey/);
  assert.equal(await c.getByRole("button", { name: "Confirm", exact: true }).isHidden(), true, "no plain Confirm");
  assert.equal(await c.getByRole("button", { name: "Confirm with your passkey" }).isEnabled(), true);
  await widget.locator("#chat textarea").fill("confirm");
  await widget.locator("#chat textarea").press("Enter");
  await widget.waitForFunction(() => !window.demo.widget.busy);
  const status = await widget.locator("#chat").evaluate((h) => h.shadowRoot.querySelector(".status").textContent);
  assert.match(status, /needs your passkey/);
  assert.equal(await c.getAttribute("data-state"), "pending_confirmation");
});

test("F-2, F-3, F-5: enrol after a fresh sign-in, confirm with the passkey on the platform's page; the provider verifies the step-up and executes once", async () => {
  const before = await stats();
  const { tab, cdp, authenticatorId } = await openPage();
  // Issue 50: the company asking is named before the person signs in.
  assert.equal(await tab.locator("h1 #company").textContent(), "TrackShare (demo)");
  await signIn(tab);
  // No passkey yet: the sign-in was a fresh one for enrolling (purpose `enrol`).
  assert.match(await tab.locator("#stepup-proves").textContent(), /does not prove the change is right/);
  await tab.locator("#enrol-passkey").click();
  await tab.locator("#confirm-passkey").waitFor();
  await tab.screenshot({ path: `${ARTIFACTS}/stepup-page.png`, fullPage: true });
  await tab.locator("#confirm-passkey").click();
  await tab.locator('#state[data-state="completed"]').waitFor();
  // Taken after its use: a copy with an older counter would be refused as a clone.
  enrolled = (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
  assert.equal(enrolled.length, 1, "one passkey made, for the platform's RP ID");
  assert.equal(enrolled[0].rpId, "localhost");
  const after = await stats();
  assert.equal(after.executions, before.executions + 1, "executed once");
  assert.equal(after.stepUpsVerified, before.stepUpsVerified + 1, "with a step-up the kit verified");
  // The widget's card follows.
  await widget.waitForFunction(() => [...document.querySelector("#chat").shadowRoot.querySelectorAll("li.proposal")].at(-1)?.dataset.state === "completed");
  await tab.close();
});

test("F-3: without user verification, with another credential, or an agent pressing Confirm without the authenticator, nothing executes and the person sees why", async () => {
  await propose("move ses_a2 to car_a1");
  const before = await stats();
  const { tab, cdp, authenticatorId } = await openPage({ credentials: enrolled });
  await signIn(tab);
  // An agent driving the browser posts Confirm without any passkey.
  const refused = await tab.evaluate(async () => {
    const form = new FormData(document.querySelector("#stepup form:last-of-type"));
    form.set("decision", "confirm");
    const res = await fetch(location.pathname, { method: "POST", body: new URLSearchParams(form) });
    return { status: res.status, text: await res.text() };
  });
  assert.equal(refused.status, 409);
  assert.match(refused.text, /needs your passkey/);
  // UV off: the authenticator cannot verify the person.
  await cdp.send("WebAuthn.setUserVerified", { authenticatorId, isUserVerified: false });
  if (await tab.locator("#confirm-passkey").count()) {
    await tab.locator("#confirm-passkey").click();
    await tab.locator("#stepup-error:not([hidden]), #stepup-refused").first().waitFor();
  }
  await cdp.send("WebAuthn.setUserVerified", { authenticatorId, isUserVerified: true });
  // Another credential, on the same RP ID but not this person's: its assertion over this
  // very action, posted with the page's own form, is refused by the platform.
  await tab.reload();
  const foreignId = randomBytes(16).toString("base64");
  const privateKey = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "der" }).toString("base64");
  const rpId = new URL(tab.url()).hostname;
  await cdp.send("WebAuthn.addCredential", { authenticatorId, credential: { credentialId: foreignId, isResidentCredential: false, rpId, privateKey, signCount: 0 } });
  const foreign = await tab.evaluate(async (id) => {
    const form = document.querySelector("#decide");
    const c = await (await fetch(form.dataset.challenge, { method: "POST", body: new URLSearchParams({ csrf: form.elements.csrf.value }) })).json();
    const dec = (t) => Uint8Array.from(atob(t.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((t.length + 3) % 4)), (ch) => ch.charCodeAt(0));
    const enc = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const cred = await navigator.credentials.get({
      publicKey: { challenge: dec(c.challenge), rpId: c.rpId, allowCredentials: [{ type: "public-key", id: dec(id) }], userVerification: "required" },
    });
    const r = cred.response;
    const body = new URLSearchParams({
      csrf: form.elements.csrf.value, decision: "confirm", nonce: c.nonce, credentialId: enc(cred.rawId),
      authenticatorData: enc(r.authenticatorData), clientDataJSON: enc(r.clientDataJSON), signature: enc(r.signature),
    });
    const res = await fetch(form.action, { method: "POST", body });
    return { status: res.status, text: await res.text() };
  }, foreignId);
  assert.equal(foreign.status, 409);
  assert.match(foreign.text, /not one of yours for this company/);
  await tab.reload();
  assert.equal(await tab.locator("#state").getAttribute("data-state"), "pending_confirmation");
  const after = await stats();
  assert.equal(after.executions, before.executions, "nothing executed");
  // Cancelled from the page: the waiting proposal ends.
  await tab.getByRole("button", { name: "Cancel" }).click();
  await tab.locator('#state[data-state="cancelled"]').waitFor();
  await tab.close();
});

test("F-3: a passkey action an MCP client prepared is confirmed on its page link with the person's passkey", async () => {
  const api = await widget.evaluate(() => document.querySelector('meta[name="countersign-api"]').content.replace(/\/$/, ""));
  const caseId = await widget.evaluate(() => window.demo.widget.caseId);
  const jwt = await (await fetch(new URL("token?user=u_alice", SITE))).text();
  const minted = await fetch(`${api}/api/cases/${caseId}/mcp-token`, {
    method: "POST", headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" }, body: "{}",
  });
  assert.equal(minted.status, 201);
  const { token } = await minted.json();
  const rpc = await fetch(`${api}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "prepare_action", arguments: { operation: OPERATION, arguments: { sessionId: "ses_a2", carId: "car_a1" } } } }),
  });
  const answer = await rpc.json();
  const data = answer.result?.structuredContent?.data || {};
  assert.equal(data.status, "pending_confirmation", JSON.stringify(answer));
  assert.match(data.confirmationUrl, /^http:\/\/localhost:\d+\/confirm\//, "the link is on the platform's passkey origin");
  const before = await stats();
  const tab = await ctx.newPage();
  const cdp = await ctx.newCDPSession(tab);
  await cdp.send("WebAuthn.enable");
  const options = { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true };
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", { options });
  for (const credential of enrolled) await cdp.send("WebAuthn.addCredential", { authenticatorId, credential });
  await tab.goto(data.confirmationUrl);
  await signIn(tab);
  // Issue 50: who asks, the expiry in the person's own time (the page's script), no
  // operation code; usable at 390 px.
  assert.match(await tab.locator("h1").innerText(), /^TrackShare \(demo\) asks you to confirm a change$/);
  assert.equal(await tab.locator("#operation").count(), 0);
  assert.doesNotMatch(await tab.locator("#expires").textContent(), /UTC$/, "shown in local time");
  await tab.setViewportSize({ width: 390, height: 844 });
  assert.ok(await tab.evaluate(() => document.documentElement.scrollWidth <= 390), "no sideways scroll at 390 px");
  await tab.screenshot({ path: `${ARTIFACTS}/confirm-page-390.png`, fullPage: true });
  await tab.locator("#confirm-passkey").click();
  await tab.locator('#state[data-state="completed"]').waitFor();
  assert.match(await tab.locator("#close-tab").textContent(), /You can close this tab now/);
  const after = await stats();
  assert.equal(after.executions, before.executions + 1, "executed once");
  assert.equal(after.stepUpsVerified, before.stepUpsVerified + 1, "with the step-up the kit verified");
  await tab.close();
});

test("F-2, F-1: the panel shows the policy and the person's passkey (English and Portuguese) and revokes it, audited", async () => {
  const panel = await ctx.newPage();
  await panel.goto(`${BASE}/admin`);
  await panel.fill("#key", KEY);
  await Promise.all([panel.waitForURL(`${BASE}/admin`), panel.click("button[type=submit]")]);
  await panel.goto(`${BASE}/admin/mcp`);
  assert.equal(await panel.locator("#stepUp").inputValue(), OPERATION, "the policy, on the MCP page");
  // Rollout without lockout: how many people have a passkey, and a warning before an
  // operation starts to need one (the save waits for the tick).
  assert.match(await panel.locator("#passkeyHolders").innerText(), /People with a passkey for your company now: 1\./);
  assert.equal(await panel.locator("#stepUpFallback").isChecked(), false, "no fallback to none unless the tenant chooses it");
  await panel.goto(`${BASE}/admin/language?to=pt-BR`);
  await panel.goto(`${BASE}/admin/mcp`);
  await panel.fill("#stepUp", `${OPERATION}, cancel_session`);
  await panel.locator("#mcp > button[type=submit]").click();
  const warning = panel.locator('p.error[data-field="actionPolicy.stepUp.acknowledged"]');
  await warning.waitFor();
  assert.match(await warning.innerText(), /Quem não tem passkey terá de criar uma/);
  assert.equal((await policyNow()).stepUp[OPERATION], "passkey", "nothing saved without the tick");
  assert.equal((await policyNow()).stepUp.cancel_session, undefined);
  await panel.check("#stepUpAcknowledged");
  await panel.locator("#mcp > button[type=submit]").click();
  // Ticked, the save goes on to the configuration's own rules (cancel_session is no
  // configured operation), so the warning is gone.
  await panel.locator('p.error[data-field^="actionPolicy.stepUp"]').first().waitFor();
  assert.equal(await warning.count(), 0);
  await panel.goto(`${BASE}/admin/language?to=en`);
  await panel.goto(`${BASE}/admin/retention?passkeys=u_alice`);
  const listed = panel.locator("#passkeys li.passkey");
  assert.equal(await listed.count(), 1);
  assert.match(await listed.first().innerText(), /ES256|EdDSA/);
  await panel.goto(`${BASE}/admin/language?to=pt-BR`);
  await panel.goto(`${BASE}/admin/retention?passkeys=u_alice`);
  assert.match(await panel.locator("#passkeys-help").innerText(), /As pessoas cadastram uma passkey/);
  await panel.getByRole("button", { name: "Revogar" }).click();
  await panel.locator("#noPasskeys").waitFor();
  assert.match(await panel.locator("p.notice").innerText(), /Passkey revogada/);
  await panel.goto(`${BASE}/admin/language?to=en`);
  const audit = await admin("GET", "audit");
  assert.ok(audit.body.items.some((r) => r.action === "passkey.revoked"), JSON.stringify(audit.body.items.slice(0, 3)));
  assert.ok(audit.body.items.some((r) => r.action === "passkey.enrolled"), "the enrolment was audited too");
  await panel.close();
});

test("F-2: after the administrator revoked it, the person enrols anew through a fresh sign-in (recovery), then removes their own passkey on the page", async () => {
  await propose("move ses_a2 to car_a3");
  const { tab } = await openPage();
  await signIn(tab);
  // No passkey any more: the sign-in was a fresh one for enrolling again.
  await tab.locator("#enrol-passkey").click();
  await tab.locator("#confirm-passkey").waitFor();
  await tab.locator("#my-passkeys summary").click();
  assert.equal(await tab.locator("#my-passkeys li.passkey").count(), 1);
  await tab.locator("#my-passkeys").getByRole("button", { name: "Remove" }).click();
  // None left: the way back is a fresh sign-in, never the page session alone.
  await tab.locator("#sign-in-to-enrol").waitFor();
  assert.equal(await tab.locator("#state").getAttribute("data-state"), "pending_confirmation", "the proposal still waits");
  await tab.getByRole("button", { name: "Cancel" }).click();
  await tab.locator('#state[data-state="cancelled"]').waitFor();
  const audit = await admin("GET", "audit");
  const byPerson = audit.body.items.filter((r) => r.action === "passkey.revoked" && r.actor === "person");
  assert.equal(byPerson.length, 1, "the person's own removal is audited");
  await tab.close();
});

test("F-3 (rollout): a site that pins widget 1.2.0 (older than step-up) shows the proposal's instructions with the confirmation page's link; the person enrols and confirms there, once", async () => {
  const before = await stats();
  const legacy = await ctx.newPage();
  await legacy.goto(`${SITE}?widget=1.2.0&poll=300`);
  await legacy.waitForFunction(() => window.demo && window.demo.ready === true);
  const shown = legacy.locator("#chat li.proposal");
  const earlier = await shown.count();
  await legacy.locator("#chat textarea").fill("move ses_a2 to car_a2");
  await legacy.locator("#chat textarea").press("Enter");
  await legacy.waitForFunction((n) => document.querySelector("#chat").shadowRoot.querySelectorAll("li.proposal").length > n, earlier);
  const instructions = shown.last().locator(".instructions");
  const text = await instructions.textContent();
  assert.match(text, /needs your passkey: a typed confirm cannot carry it out/);
  assert.doesNotMatch(text, /reply: confirm/, "never the typed-confirm instructions");
  const url = text.match(/https?:\/\/\S+\/confirm\/\S+/)[0];
  const tab = await ctx.newPage();
  const { cdp, authenticatorId } = await attach(tab);
  await tab.goto(url);
  await signIn(tab);
  await tab.locator("#enrol-passkey").click();
  await tab.locator("#confirm-passkey").click();
  await tab.locator('#state[data-state="completed"]').waitFor();
  const after = await stats();
  assert.equal(after.executions, before.executions + 1, "executed once");
  assert.equal(after.stepUpsVerified, before.stepUpsVerified + 1, "with the step-up the kit verified");
  kept = (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
  await tab.close();
  await legacy.close();
});

test("F-2: a person adds a second passkey with the one they have (an assertion, no new sign-in for it), then confirms with the new one", async () => {
  const before = await stats();
  await propose("move ses_a2 to car_a3");
  const { tab, cdp, authenticatorId } = await openPage({ credentials: kept });
  await signIn(tab);
  await tab.locator("#my-passkeys summary").click();
  await tab.locator("#add-passkey").click();
  await tab.locator("#enrol-passkey").waitFor();
  assert.match(await tab.locator("#enrol-explain").innerText(), /create the new passkey/);
  // The new device: another authenticator, the first one gone.
  await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
  const options = { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true };
  await cdp.send("WebAuthn.addVirtualAuthenticator", { options });
  await tab.locator("#enrol-passkey").click();
  await tab.locator("#enrol-passkey").waitFor({ state: "detached" });
  await tab.locator("#my-passkeys summary").click();
  assert.equal(await tab.locator("#my-passkeys li.passkey").count(), 2, "both passkeys");
  assert.equal(await tab.locator("#add-passkey").count(), 0, "one addition per page session");
  assert.equal(await tab.locator("#state").getAttribute("data-state"), "pending_confirmation", "the change waited");
  await tab.locator("#confirm-passkey").click();
  await tab.locator('#state[data-state="completed"]').waitFor();
  const after = await stats();
  assert.equal(after.executions, before.executions + 1, "executed once, with the new passkey");
  const audit = await admin("GET", "audit");
  assert.equal(audit.body.items.filter((r) => r.action === "passkey.enrolled").length >= 2, true);
  await tab.close();
});
