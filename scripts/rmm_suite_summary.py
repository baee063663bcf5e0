#!/usr/bin/env python3
"""Summarises a junit XML of RMM's Python suite run over rmm_rs.

    python3 scripts/rmm_suite_summary.py rmm-suite.xml [--log rmm-suite.log] [--expected N]

Prints markdown: the pass count (of ``--expected``, RMM 26.08's test count
with every file collected, and of the tests that were collected), the
files that failed to import, and every failing test grouped by reason,
most frequent first, each group with its count, one example test and the
line of its traceback that says what went wrong.

A reason is the exception line of the failure with numbers and addresses
blanked out, so that ``assert 37 == 0`` and ``assert 12 == 0`` fall into one
group while different exceptions stay apart.
"""

import argparse
import collections
import re
import xml.etree.ElementTree as ET

# RMM 26.08's Python suite (rapidsai/rmm python/rmm/rmm/tests at
# 5d50a37b9612) collects 1603 tests when every file imports (measured on an
# H200, 2026-12-02). Issue #32 quotes 1780 tests in 25 files, counted on
# another snapshot of RMM; pass --expected 1780 to compare with it.
RMM_TEST_COUNT = 1603


EXCEPTION = r"[A-Za-z_][\w.]*(Error|Exception|Warning|Interrupt|Exit)\b"


def error_line(text, message):
    """The traceback's last ``E   ...`` line (the exception); for an
    exception group (several teardown errors), its first sub-exception;
    else the message's first line."""
    if "ExceptionGroup" in (message or ""):
        for line in (text or "").splitlines():
            m = re.match(r"^\s*\|\s+(" + EXCEPTION + r".*)$", line)
            if m and not m.group(1).startswith("ExceptionGroup"):
                return m.group(1).strip()
    lines = [line[1:].strip() for line in (text or "").splitlines() if line.startswith("E ")]
    # The exception's own line is the first E line after the last source
    # excerpt; pytest's assertion rewriting puts the explanation right after.
    if lines:
        for i in range(len(lines) - 1, -1, -1):
            if re.match("^" + EXCEPTION, lines[i]):
                if "Regex pattern did not match" in lines[i]:
                    # pytest.raises(match=...): the pattern and the message follow.
                    return " ".join(lines[i : i + 3])
                return lines[i]
        return lines[0]
    return (message or "").splitlines()[0] if message else "(no message)"


def where_raised(text):
    """The last ``path:line: Exception`` location of the traceback."""
    found = re.findall(r"^(\S+\.py:\d+): \w+", text or "", flags=re.M)
    return found[-1] if found else ""


def reason_key(line):
    line = re.sub(r"0x[0-9a-fA-F]+", "0x…", line)
    line = re.sub(r"\b\d+(\.\d+)?\b", "N", line)
    line = re.sub(r"\bat 0x…>", ">", line)
    line = re.sub(r"<Function [^>]*>", "<Function …>", line)
    return line[:200]


# Worst first: a test that failed and then errored in teardown is a failure.
RANK = {"failed": 0, "error": 1, "skipped": 2, "passed": 3}


def load(path):
    """(name, outcome, message, text) per test. pytest writes a second
    testcase element for an error in teardown after a failure; the two are
    merged, keeping the worse outcome and the first failure's text."""
    tree = ET.parse(path)
    cases = {}
    for case in tree.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
        outcome, message, text = "passed", "", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message, text = child.get("message", ""), child.text or ""
                if child.tag != "skipped":
                    break
        seen = cases.get(name)
        if seen is None or RANK[outcome] < RANK[seen[1]]:
            cases[name] = (name, outcome, message, text)
    return list(cases.values())


def summarise(cases, expected):
    collection = [c for c in cases if c[1] == "error" and "collection failure" in c[2]]
    tests = [c for c in cases if c not in collection]
    counts = collections.Counter(outcome for _, outcome, _, _ in tests)
    passed = counts["passed"]
    out = []
    out.append(
        f"**{passed} of {expected} passed** ({100 * passed / expected:.1f}%; "
        f"{passed} of the {len(tests) - counts['skipped']} that ran, not skipped); collected {len(tests)}: "
        f"{passed} passed, {counts['failed']} failed, "
        f"{counts['error']} errors, {counts['skipped']} skipped; "
        f"{len(collection)} files failed to import"
    )
    out.append("")
    if collection:
        out.append("## Files that failed to import")
        out.append("")
        for name, _, message, text in collection:
            out.append(f"- `{name}`: `{error_line(text, message)}`")
        out.append("")
    groups = collections.defaultdict(list)
    for name, outcome, message, text in tests:
        if outcome in ("failed", "error"):
            line = error_line(text, message)
            phase = "error in set-up/teardown: " if outcome == "error" else ""
            groups[phase + reason_key(line)].append((name, line, where_raised(text)))
    out.append("## Failures by reason, most frequent first")
    out.append("")
    out.append("| # | tests | reason | example |")
    out.append("| --- | --- | --- | --- |")
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for i, (reason, members) in enumerate(ranked, 1):
        name, line, where = members[0]
        cell = reason.replace("|", "\\|")
        out.append(f"| {i} | {len(members)} | `{cell}` | `{name}` ({where}) |")
    out.append("")
    out.append("## Each group's tests")
    for i, (reason, members) in enumerate(ranked, 1):
        out.append("")
        out.append(f"### {i}. {len(members)} tests: `{reason}`")
        out.append(f"example line: `{members[0][1]}` at `{members[0][2]}`")
        files = collections.Counter(m[0].split("::")[0] for m in members)
        out.append("by file: " + ", ".join(f"{f} {n}" for f, n in files.most_common()))
    skipped = [c for c in tests if c[1] == "skipped"]
    if skipped:
        out.append("")
        out.append("## Skipped, by reason")
        reasons = collections.Counter(reason_key(c[2] or "(no reason)") for c in skipped)
        for reason, n in reasons.most_common():
            out.append(f"- {n}: `{reason}`")
    return "\n".join(out)


def from_verbose_log(path, expected):
    """The outcome counts of a run killed before it wrote its XML, from
    pytest -v's ``file::test PASSED`` lines."""
    counts = collections.Counter()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"^\S+::\S+.* (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", line)
                if m:
                    counts[m.group(1)] += 1
    except OSError as e:
        return f"no log either ({e})"
    return (
        f"**{counts['PASSED']} of {expected} passed** before the run stopped (approximate, from pytest -v's log; a test that passed and then failed its teardown counts twice): "
        + ", ".join(f"{n} {k.lower()}" for k, n in counts.most_common())
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit")
    ap.add_argument("--log", help="pytest's output (its last line is quoted)")
    ap.add_argument("--expected", type=int, default=RMM_TEST_COUNT)
    args = ap.parse_args()
    try:
        cases = load(args.junit)
    except (OSError, ET.ParseError) as e:
        print(f"no junit XML to read ({e}); pytest did not finish")
        if args.log:
            print(from_verbose_log(args.log, args.expected))
        return
    print(summarise(cases, args.expected))
    if args.log:
        try:
            with open(args.log, encoding="utf-8", errors="replace") as f:
                tail = [line.rstrip() for line in f if line.strip()][-1:]
            print("\npytest's last line: `" + (tail[0] if tail else "") + "`")
        except OSError:
            pass


if __name__ == "__main__":
    main()
