"""The official Python SDK client (`mcp` 2.x, pinned by interop.sh) against the gateway.

    python py_client.py <auto|legacy> <url> <token> <proxied-tool>

`auto` is the SDK's default (probes `server/discover`, then speaks 2026-07-28); `legacy`
forces the `initialize` handshake. Prints one JSON object with what each step observed;
interop_test.py asserts on it. The SDK validates `structuredContent` against the tool's
`outputSchema`, error results included.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def brief(r):
    text = r.content[0].text if r.content else None
    return {"isError": bool(r.is_error), "structured": r.structured_content, "text": text}


async def step(out, name, fn):
    try:
        out[name] = {"ok": True, "value": await fn()}
    except Exception as e:  # noqa: BLE001 - every failure is a reported observation
        out[name] = {"ok": False, "error": str(e), "code": getattr(getattr(e, "error", None), "code", None)}


async def main(mode, url, token, proxied):
    out = {"sdk": f"python-{mode}"}
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client:
        out["connect"] = {"ok": True, "value": {"protocolVersion": client.protocol_version}}
        call = client.call_tool
        await step(out, "list", lambda: _names(client))
        await step(out, "describe_builtin", lambda: _brief(call("describe_tool", {"name": "action_status"})))
        await step(out, "describe_proxied", lambda: _brief(call("describe_tool", {"name": proxied})))
        await step(out, "list_operations", lambda: _brief(call("list_operations", {})))
        await step(out, "action_status", lambda: _brief(call("action_status", {})))
        await step(out, "proxied", lambda: _brief(call(proxied, {})))
        await step(out, "error_envelope", lambda: _brief(call("describe_tool", {"name": "no_such_tool"})))
        await step(out, "unknown_tool", lambda: _brief(call("no_such_tool", {})))
        await step(out, "prepare_action", lambda: _brief(call("prepare_action", {"operation": "x", "arguments": {}})))
        # a real write prepared through the gateway; the person answers it in their chat.
        write = {"operation": "reassign_session_car", "arguments": {"sessionId": "ses_a1", "carId": "car_a2"}}
        await step(out, "prepare_write", lambda: _brief(call("prepare_action", write)))
        await step(out, "status_after", lambda: _brief(call("action_status", {})))
    print(json.dumps(out))


async def _names(client):
    return [t.name for t in (await client.list_tools()).tools]


async def _brief(awaitable):
    return brief(await awaitable)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
