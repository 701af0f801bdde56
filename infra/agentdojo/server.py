#!/usr/bin/env python3
"""E-1: one AgentDojo suite's functions as an MCP server over stdio, one environment per
person — a server nobody here wrote the tools of, as a tenant would run it.

  server.py --suite banking --states DIR

Every tool takes the person as its `person` argument (the bridge sets it from the
contract's X-MCP-User-Id; the model never sees it). Reads are declared read-only, writes
are ordinary write tools. Each call loads the person's environment from DIR, runs the
suite's own function with AgentDojo's runtime, records the call (function and
arguments) and saves the environment — after reads too, since some reads change it
(`get_unread_emails` marks mail read). A person without an environment file is refused.
"""
import os
import sys

# AgentDojo builds some lists from sets (a new event's participants): with Python's
# per-process string hashing their order would differ between the server that ran a call
# and the scorer that replays it. One fixed seed in both makes a replay exact.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})

import argparse
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import FunctionsRuntime

sys.path.insert(0, str(Path(__file__).parent))
import suites  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True, choices=suites.SUITES)
    ap.add_argument("--states", required=True, type=Path)
    a = ap.parse_args()
    suite = suites.suite(a.suite)
    runtime = FunctionsRuntime(suite.tools)
    writes = suites.WRITES[a.suite]

    def tool(f):
        schema = f.parameters.model_json_schema()
        schema.setdefault("properties", {})["person"] = {"type": "string"}
        schema["required"] = [*schema.get("required", []), "person"]
        return types.Tool(
            name=f.name,
            description=f.description,
            input_schema=schema,
            annotations=types.ToolAnnotations(
                read_only_hint=f.name not in writes,
                destructive_hint=f.name in writes,
            ),
        )

    tools = [tool(f) for f in suite.tools]

    def error(text):
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    async def on_list_tools(ctx, params):
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx, params):
        args = dict(params.arguments or {})
        person = args.pop("person", None)
        if not isinstance(person, str):
            return error("person is required")
        path = suites.state_file(a.states, person)
        if not path.exists():
            return error(f"no account for {person}")
        state = suites.load(path)
        result, err = runtime.run_function(state["env"], params.name, args)
        state["trace"].append({"function": params.name, "args": args})
        suites.save(path, state)
        if err:
            return error(err)
        return types.CallToolResult(content=[types.TextContent(type="text", text=tool_result_to_str(result))])

    server = Server(f"agentdojo-{a.suite}", on_list_tools=on_list_tools, on_call_tool=on_call_tool)

    async def run():
        async with stdio_server() as (r, w):
            await server.run(r, w, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
