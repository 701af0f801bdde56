"""Checks a `summary` (or a status `message`) against the rules the platform applies before
it shows one to a person; a text that breaks any of them makes the platform refuse your
whole answer. Run it before you answer `prepare_action`.

    problems = summary_problems(text)   # [] means the platform will show it as it is

The rules, in words: 1 to 4,000 characters, not only white space; no control character
but newline and tab (carriage return included); no direction-control character; no
invisible character (zero-width, soft hyphen, byte-order mark, line and paragraph
separators, private-use or unassigned code points, invisible fillers); nothing shaped like
a secret (a bearer token, a JWT, a Countersign admin key or widget secret, an AWS access key
id, a private-key block, a URL with a user name or password); no internal address (a URL
whose host is loopback, private, link-local, shared, unspecified or reserved, or has no
dot; a host name under .internal, .local or .localhost; the word localhost; an internal
IPv4 address anywhere in the text). docs/summary-test-vectors.json holds the platform's
verdict on examples of each; this check agrees with every one (infra/scripts/recipes.sh).
"""
import ipaddress
import re
import unicodedata
from urllib.parse import urlsplit

MAX_CHARS = 4000
DIRECTION = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
FILLERS = {0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800}
SECRETS = [
    ("bearer token", re.compile(r"(?i)bearer\s+([A-Za-z0-9\-._~+/]+=*)")),
    ("JWT", re.compile(r"eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*")),
    ("admin key", re.compile(r"tsk_[A-Za-z0-9_-]{8,}")),
    ("widget secret", re.compile(r"wsk_[A-Za-z0-9_-]{8,}")),
    ("AWS access key id", re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}")),
    ("private key", re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")),
]
URL = re.compile(r"[A-Za-z0-9+.-]*://[^\s<>'`]*")
INTERNAL_NAME = re.compile(r"(?i)\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:internal|local|localhost)\b|\blocalhost\b")
DOTTED = re.compile(r"[0-9][0-9.]*[0-9]")
SHARED = ipaddress.ip_network("100.64.0.0/10")


def _internal_ip(ip):
    return (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified
            or ip.is_reserved or ip.is_multicast or (ip.version == 4 and ip in SHARED)
            or (ip.version == 4 and ip == ipaddress.ip_address("255.255.255.255")))


def _dotted_internal(nums):
    """Each window of four numbers in a run of digits and dots, the first read by its last
    1-3 digits and the last by its first 1-3 (leading zeros never hide an address)."""
    for w in (nums[i:i + 4] for i in range(len(nums) - 3)):
        if not all(w):
            continue
        for i in range(min(3, len(w[0])), 0, -1):
            for j in range(min(3, len(w[3])), 0, -1):
                octets = [int(w[0][-i:]), int(w[1]), int(w[2]), int(w[3][:j])]
                if all(o <= 255 for o in octets) and _internal_ip(ipaddress.ip_address(".".join(map(str, octets)))):
                    return True
    return False


def _char_problem(c):
    cp = ord(c)
    if c in "\n\t":
        return None
    if unicodedata.category(c) == "Cc":
        return "control character"
    if cp in DIRECTION:
        return "direction-control character"
    if unicodedata.category(c) in ("Cf", "Zl", "Zp", "Co", "Cn", "Cs") or cp in FILLERS:
        return "invisible character"
    return None


def _host_problem(host):
    host = host.strip("[]").lower()
    try:
        return "internal address" if _internal_ip(ipaddress.ip_address(host)) else None
    except ValueError:
        pass
    if "." not in host or host.endswith((".internal", ".local", ".localhost")) or host == "localhost":
        return "internal address"
    return None


def summary_problems(text):
    """Every broken rule, in words (empty when the platform will accept `text`)."""
    if not text:
        return ["empty"]
    out = []
    if not text.strip():
        out.append("only white space")
    if len(text) > MAX_CHARS:
        out.append(f"{len(text)} characters; at most {MAX_CHARS}")
    for c in text:
        p = _char_problem(c)
        if p and p not in out:
            out.append(p)
    for name, pattern in SECRETS:
        for m in pattern.finditer(text):
            token = m.group(1) if m.groups() and name == "bearer token" else m.group(0)
            if name == "bearer token":
                t = token.rstrip(".,")
                if len(t) < 12 or t.isalpha():
                    continue
            out.append(f"looks like a secret ({name})")
            break
    for m in URL.finditer(text):
        candidate = m.group(0).rstrip(".,;:!?)\"")
        try:
            parts = urlsplit(candidate)
            host = parts.hostname
            if parts.username or parts.password:
                out.append("looks like a secret (URL with credentials)")
            if not host:
                out.append("internal address")
            elif _host_problem(host):
                out.append("internal address")
        except ValueError:
            out.append("internal address")
    if INTERNAL_NAME.search(text):
        out.append("internal address")
    for m in DOTTED.finditer(text):
        if _dotted_internal(m.group(0).split(".")):
            out.append("internal address")
    return list(dict.fromkeys(out))
