// E-3: the conformance suite has no header option; this loopback proxy adds the person's
// gateway token to every request and changes nothing else — Host and Origin pass through
// untouched, so the suite's DNS-rebinding scenario still tests the gateway's own check.
// Bodies stream both ways (SSE-safe).
//   LISTEN_PORT=… TARGET=http://127.0.0.1:… MCP_TOKEN=… node auth-proxy.mjs
import http from 'node:http';

const target = new URL(process.env.TARGET);
const token = process.env.MCP_TOKEN;
http
  .createServer((req, res) => {
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', (e) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(e));
    });
    req.pipe(up);
    res.on('close', () => up.destroy());
  })
  .listen(Number(process.env.LISTEN_PORT), '127.0.0.1', () => console.log('listening'));
