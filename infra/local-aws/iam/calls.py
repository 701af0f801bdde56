"""I-1: how many calls a principal has made on the emulator so far.

    python calls.py http://127.0.0.1:PORT operator

`infra/scripts/browser-tests.sh` reads the operator's count once the dev server is up and
again after the browser suites: only functions ran in between, so it must not move (no
function path calls as the operator).
"""

import json
import sys
import urllib.request

with urllib.request.urlopen(f"{sys.argv[1].rstrip('/')}/_countersign/iam/usage", timeout=30) as r:
    print(json.load(r)["by_principal"].get(sys.argv[2], 0))
