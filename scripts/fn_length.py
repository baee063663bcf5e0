#!/usr/bin/env python3
"""Lists Rust functions longer than a limit (default 120 lines), tests aside.

A function's length runs from the line of its `fn` keyword to the line of
the brace that closes its body. Test code does not count: files under a
`tests/` folder, and items marked `#[test]` or `#[cfg(test)]` (a test module
with all it holds). The scan matches braces outside comments, strings and
character literals; it does not parse Rust beyond that.

    python3 scripts/fn_length.py [--limit N] PATH...

PATH is a file or a folder (searched for `*.rs`, skipping `target/`).
Prints one line per long function, `path:line: name is N lines`, longest
first, and exits with status 1 when there is one.
"""

import argparse
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def blank_out(text):
    """`text` with comments, strings and char literals replaced by spaces
    (newlines kept), so that braces and keywords left are code."""
    out = []
    i, n = 0, len(text)
    keep = lambda s: "".join(c if c == "\n" else " " for c in s)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(keep(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep(text[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(keep(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(keep(text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 2)
                j = n if j < 0 else j + 1
            elif i + 2 < n and text[i + 2] == "'":
                j = i + 3
            else:
                j = i + 1
            out.append(keep(text[i:j]) if j > i + 1 else c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def test_regions(code):
    """Character ranges of items marked `#[test]` or `#[cfg(test)]`."""
    regions = []
    for m in re.finditer(r"#\s*\[\s*(?:test|cfg\s*\(\s*test\s*\))\s*\]", code):
        # The item ends at its body's closing brace, or at a `;` first.
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        end = matching_brace(code, j) if j < len(code) and code[j] == "{" else j
        regions.append((m.start(), end))
    return regions


def long_functions(path, limit):
    with open(path, encoding="utf-8") as f:
        code = blank_out(f.read())
    skip = test_regions(code)
    found = []
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        # The body opens at the first `{` after the signature, unless a `;`
        # (a declaration without a body) comes first.
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        end = matching_brace(code, j)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        if last - first + 1 > limit:
            found.append((last - first + 1, path, first, m.group(1)))
    return found


def rust_files(root):
    if os.path.isfile(root):
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("target", ".git", "tests"))
        for name in sorted(filenames):
            if name.endswith(".rs"):
                yield os.path.join(dirpath, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=120)
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    found = []
    for root in args.paths:
        for path in rust_files(root):
            found.extend(long_functions(path, args.limit))
    for lines, path, line, name in sorted(found, reverse=True):
        print(f"{path}:{line}: {name} is {lines} lines (limit {args.limit})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
