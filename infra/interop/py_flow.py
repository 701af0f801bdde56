"""X-2 end to end with the official Python SDK client (`mcp` 2.x; issue 29).

    python py_flow.py <stateless|legacy-url> <url> <token> <confirm|cancel> <carId>

stateless:  the SDK's default mode (2026-07-28) with an elicitation callback, so it
            declares URL elicitation: the server answers `input_required`; the callback
            has the person complete the page in headless Chromium
            (widget/test/complete-page.mjs) and accepts; the SDK retries with the
            `requestState` and returns the execution's result.
legacy-url: the `initialize` handshake (2025-11-25) declaring URL elicitation: the
            URL-elicitation-required error (-32042); the page is completed; `action_status`
            with the actionId follows the proposal to its result.

Prints one JSON object with what each step observed; interop_test.py asserts on it.
"""

import asyncio
import json
import os
import subprocess
import sys

import httpx2
import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

HERE = os.path.dirname(os.path.abspath(__file__))
COMPLETER = os.path.join(HERE, "..", "..", "widget", "test", "complete-page.mjs")


def complete(url, decision):
    p = subprocess.run(["node", COMPLETER, url, decision], capture_output=True, text=True, timeout=90)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"failure": p.stderr[-1000:]}


def brief(r):
    return {"isError": bool(r.is_error), "structured": r.structured_content}


async def main(mode, url, token, decision, car):
    write = {"operation": "reassign_session_car", "arguments": {"sessionId": "ses_a2", "carId": car}}
    out = {"mode": mode, "callbacks": 0}

    async def on_elicit(_context, params):
        out["callbacks"] += 1
        out["elicited"] = {"mode": params.mode, "url": getattr(params, "url", None), "message": params.message}
        out["page"] = await asyncio.to_thread(complete, out["elicited"]["url"], decision)
        return types.ElicitResult(action="accept")

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    client_mode = "auto" if mode == "stateless" else "legacy"
    try:
        async with Client(
            streamable_http_client(url, http_client=http), mode=client_mode, cache=None, elicitation_callback=on_elicit
        ) as client:
            out["protocolVersion"] = client.protocol_version
            try:
                out["result"] = brief(await client.call_tool("prepare_action", write))
            except MCPError as e:
                out["error"] = {"code": e.code, "message": e.message, "data": e.data}
            error = out.get("error") or {}
            if mode == "legacy-url" and error.get("code") == -32042:
                data = error.get("data") or {}
                out["page"] = await asyncio.to_thread(complete, data["elicitations"][0]["url"], decision)
                out["status"] = brief(await client.call_tool("action_status", {"actionId": data.get("actionId")}))
    except Exception as e:  # noqa: BLE001 - every failure is a reported observation
        out["failure"] = repr(e)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
