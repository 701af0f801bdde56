"""Interop test (issue 4, G-rules over the wire): drives the local gateway with the
official MCP Inspector CLI (npm @modelcontextprotocol/inspector, pinned in package.json).

Run by the test command inside infra/scripts/with-local-aws.sh, after `cargo build`:
bootstraps AWS resources on the emulator, starts the real gateway binary on a free
loopback port, mints a D-4 token with the operator CLI, then lists the tools and calls
each built-in through the Inspector, asserting exit codes and the JSON it prints. The
Inspector validates structuredContent against each tool's outputSchema, error results
included, so a non-conforming envelope fails here.
"""

import json
import os
import socket
import subprocess
import sys
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CLI = os.path.join(TARGET, "debug", "countersign")
GATEWAY = os.path.join(TARGET, "debug", "countersign-gateway")
INSPECTOR = os.path.join(ROOT, "infra", "interop", "node_modules", ".bin", "mcp-inspector")
TENANT = "ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R"
CASE = "case_01JDZ6Y5X1QW9T3V7N2K4M8P0R"

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def inspector(url, token, *args):
    cmd = [INSPECTOR, "--cli", url, "--transport", "http", "--header", f"Authorization: Bearer {token}"]
    cmd += list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    # The CLI prints {"result": <MCP result>}; an outputSchema validation failure prints an
    # error instead, so reading result.structuredContent below also proves validation passed.
    if isinstance(out, dict) and "result" in out:
        out = out["result"]
    return p.returncode, out, p.stdout + p.stderr


def main():
    assert os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://127.0.0.1:"), "run inside with-local-aws.sh"
    suffix = uuid.uuid4().hex[:10]
    env = dict(os.environ)
    env.update({
        "COUNTERSIGN_TABLE": f"interop-{suffix}",
        "COUNTERSIGN_SIGNING_KEY": f"alias/interop-{suffix}",
        "COUNTERSIGN_SECRET_PREFIX": f"interop-{suffix}/",
        "RUST_LOG": "warn",
    })
    subprocess.run([CLI, "bootstrap"], env=env, check=True, capture_output=True)
    token = subprocess.run(
        [CLI, "gateway-token", "--tenant", TENANT, "--user", "driver-42", "--case", CASE],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()
    port = free_port()
    env["COUNTERSIGN_GATEWAY_ADDR"] = f"127.0.0.1:{port}"
    gw = subprocess.Popen([GATEWAY], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"

        code, out, raw = inspector(url, token, "--method", "tools/list", "--format", "json")
        check(code == 0, f"tools/list exits 0 (got {code}): {raw[:300]}")
        tools = {t["name"]: t for t in (out or {}).get("tools", [])}
        check(sorted(tools) == ["action_status", "describe_tool", "list_operations", "prepare_action"], f"tools/list names: {sorted(tools)}")
        versions = {"list_operations": "1.1.0", "prepare_action": "1.1.0"}
        for name, t in tools.items():
            check(t.get("_meta", {}).get("version") == versions.get(name, "1.0.0"), f"{name} publishes _meta.version")
            check(isinstance(t.get("outputSchema"), dict), f"{name} publishes an outputSchema")

        code, out, raw = inspector(url, token, "--method", "tools/call", "--tool-name", "describe_tool",
                                   "--tool-args-json", json.dumps({"name": "list_operations"}), "--format", "json")
        check(code == 0, f"describe_tool exits 0 (got {code}): {raw[:300]}")
        sc = (out or {}).get("structuredContent", {})
        check(sc.get("ok") is True and sc.get("data", {}).get("name") == "list_operations", "describe_tool answers the descriptor")
        check(sc.get("meta") == {"tool": "describe_tool", "version": "1.0.0"}, "describe_tool meta")

        code, out, raw = inspector(url, token, "--method", "tools/call", "--tool-name", "list_operations", "--format", "json")
        check(code == 0, f"list_operations exits 0 (got {code}): {raw[:300]}")
        check((out or {}).get("structuredContent", {}).get("data") == {"items": [], "actionsEnabled": False}, "list_operations: no configuration, no operations")

        # Error answers: isError results, validated by the Inspector against outputSchema.
        for name, args, want in [
            ("action_status", {}, "NOT_FOUND"),
            ("prepare_action", {"operation": "reassign_session_car", "arguments": {}}, "TOOL_ERROR"),
            ("describe_tool", {"name": "x", "confirmed": True}, "VALIDATION_ERROR"),
        ]:
            code, out, raw = inspector(url, token, "--method", "tools/call", "--tool-name", name,
                                       "--tool-args-json", json.dumps(args), "--format", "json")
            check(code == 5, f"{name} error exits 5 (got {code}): {raw[:300]}")
            sc = (out or {}).get("structuredContent", {})
            check(sc.get("ok") is False and sc.get("error", {}).get("code") == want,
                  f"{name} answers {want} as a validated structured envelope")
            check((out or {}).get("isError") is True, f"{name} isError")

        code, out, raw = inspector(url, "not-a-token", "--method", "tools/list", "--format", "json")
        check(code == 3, f"a bad token exits 3 (auth) (got {code})")
    finally:
        gw.terminate()
        gw.wait(timeout=10)
    if failures:
        print(f"{len(failures)} interop check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("inspector interop: all checks passed")


if __name__ == "__main__":
    main()
