// X-2 end to end with an official TypeScript client (issue 29): prepare a write through
// the gateway, be sent to the confirmation page in the era's own form, have the person
// complete it in headless Chromium (widget/test/complete-page.mjs), and get the outcome.
//
//   node ts_flow.mjs <stateless|legacy-url|link> <url> <token> <confirm|cancel> <carId> [person]
//
// stateless:  v2 client, 2026-07-28, declares URL elicitation: `input_required`; its
//             elicitation handler completes the page and accepts; the SDK retries with
//             the requestState and returns the execution's result.
// legacy-url: v2 client, 2025-11-25 `initialize` declaring URL elicitation: the -32042
//             error; the page is completed; `action_status` with the actionId follows it.
// link:       v1 client (2025-11-25) declaring no elicitation: an ordinary result with
//             `confirmationUrl`; the page is completed; `action_status` follows it.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const [mode, url, token, decision = "confirm", car = "car_a3", person] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const completer = path.join(here, "..", "..", "widget", "test", "complete-page.mjs");
const write = { operation: "reassign_session_car", arguments: { sessionId: "ses_a2", carId: car } };
const out = { mode };

function complete(pageUrl) {
  const text = execFileSync("node", [completer, pageUrl, decision, ...(person ? [person] : [])], { encoding: "utf8", timeout: 90_000 });
  return JSON.parse(text.trim().split("\n").pop());
}

async function client() {
  if (mode === "link") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    return { Client, StreamableHTTPClientTransport, options: {} };
  }
  const m = await import("@modelcontextprotocol/client");
  const negotiation = mode === "stateless" ? { mode: "auto" } : { mode: "legacy" };
  return {
    Client: m.Client,
    StreamableHTTPClientTransport: m.StreamableHTTPClientTransport,
    options: { versionNegotiation: negotiation, capabilities: { elicitation: { url: {} } } },
    m,
  };
}

const { Client, StreamableHTTPClientTransport, options, m } = await client();
const c = new Client({ name: `countersign-flow-${mode}`, version: "1.0.0" }, options);
if (m) {
  c.setRequestHandler("elicitation/create", async (request) => {
    const p = request.params;
    out.elicited = { mode: p.mode, url: p.url, message: p.message };
    out.page = complete(p.url);
    return { action: "accept" };
  });
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const brief = (r) => ({ isError: r.isError ?? false, structured: r.structuredContent ?? null });
try {
  await c.connect(transport);
  out.protocolVersion = transport.protocolVersion ?? c.getNegotiatedProtocolVersion?.() ?? null;
  try {
    out.result = brief(await c.callTool({ name: "prepare_action", arguments: write }));
  } catch (e) {
    out.error = { code: e?.code ?? null, message: String(e?.message ?? e), data: e?.data ?? null };
  }
  // The eras without a retry: follow the proposal after the page.
  let pageUrl = null;
  let actionId = null;
  if (mode === "legacy-url" && out.error?.code === -32042) {
    pageUrl = out.error.data?.elicitations?.[0]?.url;
    // The SDK keeps only the elicitations of the error's data: their id is the action's.
    actionId = out.error.data?.actionId ?? out.error.data?.elicitations?.[0]?.elicitationId;
  } else if (mode === "link") {
    const data = out.result?.structured?.data ?? {};
    pageUrl = data.confirmationUrl;
    actionId = data.actionId;
  }
  if (pageUrl) {
    out.page = complete(pageUrl);
    out.status = brief(await c.callTool({ name: "action_status", arguments: { actionId } }));
  }
} catch (e) {
  out.failure = String(e?.stack ?? e);
}
await c.close().catch(() => {});
process.stdout.write(JSON.stringify(out) + "\n");
