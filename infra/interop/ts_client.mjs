// One official TypeScript SDK client against the gateway (issue 17's interop suite).
//
//   node ts_client.mjs <v1|v2> <url> <token> <proxied-tool>
//
// v1 is `@modelcontextprotocol/sdk` (the `initialize` handshake); v2 is
// `@modelcontextprotocol/client` with `versionNegotiation: {mode: 'auto'}` (probes
// `server/discover`, then speaks 2026-07-28). Prints one JSON object with what each step
// observed; interop_test.py asserts on it. Both SDKs validate `structuredContent` against
// the tool's `outputSchema` after listing, error results included, so a non-conforming
// envelope surfaces here as a thrown error.
const [sdk, url, token, proxied] = process.argv.slice(2);

async function load() {
  if (sdk === 'v1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    return { Client, StreamableHTTPClientTransport, options: {} };
  }
  const m = await import('@modelcontextprotocol/client');
  return {
    Client: m.Client,
    StreamableHTTPClientTransport: m.StreamableHTTPClientTransport,
    options: { versionNegotiation: { mode: 'auto' } },
  };
}

async function step(out, name, fn) {
  try {
    out[name] = { ok: true, value: await fn() };
  } catch (e) {
    out[name] = { ok: false, error: String(e?.message ?? e), code: e?.code ?? null };
  }
}

const { Client, StreamableHTTPClientTransport, options } = await load();
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: `countersign-interop-${sdk}`, version: '1.0.0' }, options);
const out = { sdk };
await step(out, 'connect', async () => {
  await client.connect(transport);
  return { protocolVersion: transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null };
});
const call = (name, args) => client.callTool({ name, arguments: args });
const brief = (r) => ({ isError: r.isError ?? false, structured: r.structuredContent ?? null, text: r.content?.[0]?.text ?? null });
await step(out, 'list', async () => (await client.listTools()).tools.map((t) => t.name));
await step(out, 'describe_builtin', async () => brief(await call('describe_tool', { name: 'action_status' })));
await step(out, 'describe_proxied', async () => brief(await call('describe_tool', { name: proxied })));
await step(out, 'list_operations', async () => brief(await call('list_operations', {})));
await step(out, 'action_status', async () => brief(await call('action_status', {})));
await step(out, 'proxied', async () => brief(await call(proxied, {})));
await step(out, 'error_envelope', async () => brief(await call('describe_tool', { name: 'no_such_tool' })));
await step(out, 'unknown_tool', async () => brief(await call('no_such_tool', {})));
await step(out, 'prepare_action', async () => brief(await call('prepare_action', { operation: 'x', arguments: {} })));
// a real write prepared through the gateway; the person answers it in their chat.
await step(out, 'prepare_write', async () => brief(await call('prepare_action', { operation: 'reassign_session_car', arguments: { sessionId: 'ses_a1', carId: 'car_a2' } })));
await step(out, 'status_after', async () => brief(await call('action_status', {})));
await client.close().catch(() => {});
process.stdout.write(JSON.stringify(out) + '\n');
