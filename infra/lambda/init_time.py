"""Measures a Lambda bootstrap's init time: from exec to its first Runtime API
`GET /2018-06-01/runtime/invocation/next`, the moment Lambda ends the init phase.

    python3 init_time.py BOOTSTRAP [RUNS]

Runs the messages function's bootstrap RUNS times (default 7) under each model adapter
configuration (scripted, bedrock:…, openai:… with an API key secret) and prints the median
and range of each, in milliseconds. No network is reached: init must make no call (the
adapters read nothing until their first step), and the emulator answers nothing else.
"""
import http.server
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

CONFIGS = {
    "scripted": {"COUNTERSIGN_MODEL": "scripted"},
    "bedrock": {"COUNTERSIGN_MODEL": "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0"},
    "openai": {
        "COUNTERSIGN_MODEL": "openai:gpt-4.1-mini",
        "COUNTERSIGN_MODEL_BASE_URL": "https://api.openai.com/v1",
        "COUNTERSIGN_MODEL_API_KEY_SECRET": "countersign/platform/model-api-key",
    },
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one_run(bootstrap, extra):
    first_next = threading.Event()
    stamp = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.endswith("/runtime/invocation/next") and not first_next.is_set():
                stamp["t"] = time.monotonic()
                first_next.set()
            # Never answer: the run is over once init ended.
            time.sleep(5)

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": "countersign-messages",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "none",
        "AWS_SECRET_ACCESS_KEY": "none",
        "AWS_EC2_METADATA_DISABLED": "true",
        "COUNTERSIGN_TABLE": "countersign",
        **extra,
    }
    start = time.monotonic()
    proc = subprocess.Popen([bootstrap], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ok = first_next.wait(10)
    proc.kill()
    _, err = proc.communicate()
    server.shutdown()
    if not ok:
        raise SystemExit(f"no `next` within 10 s with {extra}: {err.decode()[-800:]}")
    return (stamp["t"] - start) * 1000


def main():
    bootstrap = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    print(f"messages function init time (exec -> first `next`), median of {runs} runs:")
    for name, extra in CONFIGS.items():
        times = sorted(one_run(bootstrap, extra) for _ in range(runs))
        print(f"  {name:9} {statistics.median(times):6.1f} ms  (min {times[0]:.1f}, max {times[-1]:.1f})")


if __name__ == "__main__":
    main()
