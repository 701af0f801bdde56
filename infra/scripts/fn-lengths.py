#!/usr/bin/env python3
"""Lists the longest functions of the project's Rust sources (outside tests) and fails
when one is longer than the limit. Usage: fn-lengths.py [--limit N] [--top N] [paths...]

A function's length counts the lines from its `fn` line to its closing brace. Test
code (`tests/` folders, `#[cfg(test)] mod` blocks, benches) is not counted.
"""
import argparse
import pathlib
import re
import sys

FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')


def strip_strings(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split('//', 1)[0]


def block_end(lines, j, declarations=False):
    """The line where the brace block opening at or after line `j` closes, and whether
    one opened (with `declarations`, a `;` line before any brace ends it: no body)."""
    d = 0
    started = False
    while j < len(lines):
        s = strip_strings(lines[j])
        if declarations and not started and ';' in s and '{' not in s:
            break
        d += s.count('{') - s.count('}')
        if '{' in s:
            started = True
        if started and d <= 0:
            break
        j += 1
    return j, started


def functions(path):
    lines = path.read_text().splitlines()
    out = []
    i = 0
    in_test_mod_depth = None
    depth = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r'^\s*#\[cfg\(test\)\]', line):
            # Skip the test module that follows.
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith('mod '):
                j += 1
            j, _ = block_end(lines, j)
            i = j + 1
            continue
        m = FN.match(line)
        if m:
            j, started = block_end(lines, i, declarations=True)
            if started:
                out.append((j - i + 1, m.group(6), i + 1))
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--limit', type=int, default=0)
    ap.add_argument('--top', type=int, default=15)
    ap.add_argument('paths', nargs='*', default=['shared', 'functions', 'infra'])
    a = ap.parse_args()
    rows = []
    for root in a.paths:
        for p in sorted(pathlib.Path(root).rglob('*.rs')):
            parts = p.parts
            if 'tests' in parts or 'benches' in parts or 'target' in parts or 'testkit' in parts:
                continue
            for n, name, line in functions(p):
                rows.append((n, f'{p}:{line}', name))
    rows.sort(reverse=True)
    for n, where, name in rows[: a.top]:
        print(f'{n:5}  {name:32} {where}')
    over = [r for r in rows if a.limit and r[0] > a.limit]
    if over:
        print(f'{len(over)} function(s) longer than {a.limit} lines', file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
