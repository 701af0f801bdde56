// The seed's stack, for the load comparison (infra/scripts/load-gateway.sh, issue 17): the
// TypeScript SDK's own server (`@modelcontextprotocol/sdk` 1.x, stateless, JSON responses,
// one Server and transport per request as its documentation prescribes for stateless mode)
// doing the gateway's job for the measured request: check the HS256 bearer token, then
// answer `tools/call describe_tool` with the same envelope the gateway answers.
//
//   node ts_server.mjs PORT TOKEN_KEY ENVELOPE_FILE
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [port, key, envelopeFile] = process.argv.slice(2);
const envelope = JSON.parse(readFileSync(envelopeFile, 'utf8'));
const text = JSON.stringify(envelope);

function verified(authorization) {
  const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
  const [header, payload, signature] = token?.split('.') ?? [];
  if (!signature) return false;
  const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  return claims.exp > Date.now() / 1000;
}

function mcpServer() {
  const server = new Server({ name: 'ts-baseline', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{ name: 'describe_tool', inputSchema: { type: 'object', properties: { name: { type: 'string' } } } }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async () => ({
    content: [{ type: 'text', text }],
    structuredContent: envelope,
    isError: false,
  }));
  return server;
}

createServer((req, res) => {
  if (!verified(req.headers.authorization)) {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"UNAUTHORIZED"}}');
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = JSON.parse(Buffer.concat(chunks).toString());
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
}).listen(Number(port), '127.0.0.1');
