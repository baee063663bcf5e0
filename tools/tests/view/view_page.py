"""The viewer as a person uses it, in headless Chromium through Playwright.

    python3 tools/tests/view/view_page.py [--keep DIR]

Writes a synthetic log with a known allocation and a failed one (plus an
out-of-memory report for it, and a second log to compare), builds the page
with `rmm-report view` ($RMM_REPORT, else target/debug/rmm-report, built if
missing), opens it in Chromium ($CHROMIUM, else /usr/bin/chromium), zooms in
on the known allocation with the mouse wheel, hovers it and checks the
tooltip against the log's row (size, address, stream, thread, allocation and
free times and lines), clicks to see the state at that moment and checks it
against a replay of the log, hovers the failure and checks its report,
switches the comparison on and checks that it shows, and takes screenshots
(into the temporary folder, or --keep DIR). Exits non-zero on any mismatch.
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_log  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def rmm_report():
    exe = os.environ.get("RMM_REPORT") or os.path.join(ROOT, "target", "debug", "rmm-report")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "-p", "rmm-tools", "--bin", "rmm-report"], cwd=ROOT, check=True)
    return exe


def replay_state(log_path, event_index):
    """Live blocks and bytes in use right after event `event_index` (0-based)."""
    live = {}
    with open(log_path) as f:
        for i, row in enumerate(csv.DictReader(f)):
            if row["Action"] == "allocate" and int(row["Pointer"], 16) != 0:
                live[row["Pointer"]] = int(row["Size"])
            elif row["Action"] == "free":
                live.pop(row["Pointer"], None)
            if i == event_index:
                break
    return len(live), sum(live.values())


def human_bytes(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, u = float(b), 0
    while abs(v) >= 1024 and u < len(units) - 1:
        v /= 1024
        u += 1
    return "%d B" % round(v) if u == 0 else "%.1f %s" % (v, units[u])


def write_report(path, failure):
    report = {
        "schema": "rmm-oom-report", "version": 1, "time": failure["time"], "unix_time_ns": 0,
        "request": {"size": failure["size"], "alignment": 256, "stream": failure["stream"]},
        "failed_layer": "pool",
        "snapshot": {"schema": "rmm-snapshot", "version": 1, "time": failure["time"], "unix_time_ns": 0,
                     "device": 0, "resource": {"name": "pool", "type": "PoolMemoryResource",
                                               "reserved_bytes": 1 << 30, "used_bytes": 900 << 20,
                                               "free_bytes": 124 << 20, "largest_free_block": 60 << 20,
                                               "fragmentation": 0.5, "free_bytes_by_stream": {}, "chunks": [],
                                               "blocks": [], "graph_memory": None, "counters": None,
                                               "upstream": None},
                     "live_allocations": []},
        "largest_live_sites": [],
    }
    with open(path, "w") as f:
        json.dump(report, f)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def zoom_onto(page, index):
    """Wheels in over allocation `index` (5 notches at least) until its box
    is at least 40 px wide."""
    for notch in range(60):
        box = page.evaluate("(a) => window.rmmView.locate(a)", index)
        if box is None:
            raise AssertionError("the known allocation left the screen while zooming")
        if notch >= 5 and box["width"] >= 40 and box["height"] >= 8:
            return box
        page.mouse.move(box["x"], box["y"])
        page.mouse.wheel(0, -120)
        page.wait_for_timeout(50)
    raise AssertionError("could not zoom onto the allocation")


def browse(page, html, log_path, known, failure, shots):
    page.goto("file://" + html)
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)
    span0 = page.evaluate("window.rmmView.view.t1 - window.rmmView.view.t0")
    box = zoom_onto(page, known["index"])
    span1 = page.evaluate("window.rmmView.view.t1 - window.rmmView.view.t0")
    check(span1 < span0 / 3, "the wheel zoomed in (%.0f us -> %.0f us)" % (span0, span1))
    page.mouse.move(box["x"], box["y"])
    tip = page.locator("#tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    print(text)
    expect = {
        "size": "size      %d B (%s)" % (known["size"], human_bytes(known["size"])),
        "address": "address   " + known["pointer"],
        "stream": "stream    " + known["stream"],
        "thread": "thread    " + known["thread"],
        "allocated": "allocated " + known["time"],
        "alloc line": "line %d)" % known["line"],
        "freed": "freed     " + known["free_time"],
        "free line": "line %d)" % known["free_line"],
    }
    for what, needle in expect.items():
        check(needle in text, "tooltip %s: %r" % (what, needle))
    page.screenshot(path=os.path.join(shots, "hover.png"))
    # The state at that moment, against a replay of the log.
    page.mouse.click(box["x"], box["y"])
    state = page.locator("#state").inner_text()
    event = int(re.search(r"event (\d+)", state).group(1))
    live, used = replay_state(log_path, event)
    check(page.locator("#state-live").inner_text() == str(live), "live blocks at event %d: %d" % (event, live))
    check(page.locator("#state-bytes").inner_text() == human_bytes(used), "bytes in use at event %d: %s" % (event, human_bytes(used)))
    # The failed allocation and its report.
    oom = page.locator("#oom").inner_text()
    check("1 failed allocation(s), 1 report(s)" in oom, "the failure is listed with its report")
    check("request   %d B" % failure["size"] in oom and "failed in pool" in oom, "the report is shown with the failure")
    # The comparison.
    page.locator("#compare").check()
    page.locator("#comparison").wait_for(state="visible")
    cmp_text = page.locator("#comparison").inner_text()
    check("b.csv" in cmp_text and "15000" in cmp_text, "the comparison shows the other run (15000 events)")
    page.screenshot(path=os.path.join(shots, "compare.png"))


def write_snapshot(path):
    """A snapshot (schema rmm-snapshot) with one allocation that has a
    backtrace; returns that allocation."""
    known = {"address": "0x7f0000200000", "size": 3 << 20, "stream": "0x3", "thread": 77,
             "time": "11:00:00.500000", "backtrace": ["train_step at model.py:42", "main at run.py:7"]}
    other = {"address": "0x7f0000000000", "size": 1 << 20, "stream": "0x0", "thread": 76,
             "time": "11:00:00.100000", "backtrace": None}
    snap = {"schema": "rmm-snapshot", "version": 1, "time": "11:00:01.000000", "unix_time_ns": 0, "device": 0,
            "resource": {"name": "pool", "type": "PoolMemoryResource", "reserved_bytes": 8 << 20,
                         "used_bytes": 4 << 20, "free_bytes": 4 << 20, "largest_free_block": 2 << 20,
                         "fragmentation": 0.5, "free_bytes_by_stream": {"0x0": 4 << 20}, "chunks": [],
                         "blocks": [], "graph_memory": None, "counters": None, "upstream": None},
            "live_allocations": [known, other]}
    with open(path, "w") as f:
        json.dump(snap, f)
    return known


def browse_snapshot(page, html, known):
    """Hovers the snapshot's allocation: its backtrace is in the tooltip."""
    page.goto("file://" + html)
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)
    box = page.evaluate("() => window.rmmView.locate(1)")
    page.mouse.move(box["x"], box["y"])
    tip = page.locator("#tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    for needle in ["size      %d B" % known["size"], "address   " + known["address"], "thread    77",
                   "allocated " + known["time"], "live at the snapshot"] + ["  " + f for f in known["backtrace"]]:
        check(needle in text, "snapshot tooltip: %r" % needle)
    page.mouse.click(box["x"], box["y"])
    check("Resource stack at the snapshot" in page.locator("#state").inner_text(), "the snapshot's stack is shown")


def main(argv):
    from playwright.sync_api import sync_playwright

    keep = argv[argv.index("--keep") + 1] if "--keep" in argv else None
    tmp = keep or tempfile.mkdtemp(prefix="rmm-view-test-")
    os.makedirs(tmp, exist_ok=True)
    log_a, log_b = os.path.join(tmp, "a.csv"), os.path.join(tmp, "b.csv")
    known, failure = gen_log.write_log(log_a, 20000, seed=1)
    gen_log.write_log(log_b, 15000, seed=2)
    report = os.path.join(tmp, "oom.json")
    write_report(report, failure)
    html = os.path.join(tmp, "view.html")
    subprocess.run([rmm_report(), "view", log_a, "--out", html, "--compare", log_b, "--report", report], check=True)
    with open(html) as f:
        page_text = f.read()
    check(not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page_text), "the page loads nothing from outside")
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: errors.append("request " + r.url) if not r.url.startswith(("file:", "data:", "blob:")) else None)
        browse(page, html, log_a, known, failure, tmp)
        snap_known = write_snapshot(os.path.join(tmp, "snapshot.json"))
        snap_html = os.path.join(tmp, "snapshot.html")
        subprocess.run([rmm_report(), "view", os.path.join(tmp, "snapshot.json"), "--out", snap_html], check=True)
        browse_snapshot(page, snap_html, snap_known)
        browser.close()
    check(not errors, "no script error and no request out of the page %s" % errors)
    print("screenshots in", tmp)


if __name__ == "__main__":
    main(sys.argv)
