// the person completes a confirmation page in headless Chromium, for the interop
// suite's MCP clients (their URL-elicitation handlers call this) and the page's own tests.
//
//   node test/complete-page.mjs <page url> <confirm|cancel|none> [demo person]
//
// Opens the page, presses its "Sign in" (the local run's demo site signs the demo person
// in and posts the hand-off token back), reads what the page shows,
// presses the button and waits for the outcome. Prints one JSON object: the summary and
// operation shown, the state after, the result text, the page's CSP, and console errors.
import { chromium } from "playwright-core";

const [url, decision = "confirm", person] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const out = { consoleErrors: [], failedRequests: [] };
try {
  const page = await (await browser.newContext()).newPage();
  page.on("console", (m) => m.type() === "error" && out.consoleErrors.push(m.text()));
  page.on("pageerror", (e) => out.consoleErrors.push(`pageerror: ${e.message}`));
  page.on("response", (r) => r.status() >= 400 && out.failedRequests.push(`${r.status()} ${r.url().split("?")[0]}`));
  const first = await page.goto(url);
  out.csp = first.headers()["content-security-policy"] || null;
  // N-6: Sign in is a button (the nonce is made when it is pressed); the tenant's
  // sign-in posts the token back. Another demo person: the demo site reads a cookie (the
  // sign-in is reached by a redirect, which a route cannot rewrite; cookies ignore ports).
  if (person) {
    // The demo site runs on 127.0.0.1; the page on localhost (where passkeys can run).
    const hosts = [...new Set([new URL(url).hostname, "127.0.0.1"])];
    await page.context().addCookies(hosts.map((domain) => ({ name: "countersign-demo-user", value: person, domain, path: "/" })));
  }
  out.signInHost = await page.locator("#sign-in-host").textContent();
  const returned = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.endsWith("/return"));
  const landed = page
    .waitForResponse((r) => r.request().method() === "GET" && /^\/confirm\/[^/]+$/.test(new URL(r.url()).pathname))
    .catch(() => null);
  await page.locator("#sign-in").click();
  const back = await returned;
  // What the person lands on: the page (after the return's 303), or the return's refusal.
  out.signedInStatus = back.status() === 303 ? (await landed).status() : back.status();
  await page.waitForSelector("#summary, .notice");
  const text = async (sel) => ((await page.locator(sel).count()) ? page.locator(sel).first().textContent() : null);
  out.summary = await text("#summary");
  out.operation = await text("#operation");
  out.instructions = await text("#instructions");
  out.notice = await text(".notice");
  if (decision !== "none" && out.summary !== null) {
    const label = decision === "confirm" ? /^(Confirm|Confirmar)$/ : /^(Cancel|Cancelar)$/;
    await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: label }).click()]);
    out.status = await page.locator("#state").getAttribute("data-state");
    out.result = await text("#result");
  }
  out.url = page.url();
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
