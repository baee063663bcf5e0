"""Load time of `rmm-report view` pages in headless Chromium.

    python3 tools/tests/view/view_bench.py [EVENTS...] [--dir DIR]

For each event count (default 1000000 10000000) writes a synthetic log
(gen_log.py), builds its page with `rmm-report view` ($RMM_REPORT, else
target/release/rmm-report, else target/debug/rmm-report), opens it in
Chromium ($CHROMIUM, else /usr/bin/chromium) and prints: the page's size,
the time from navigation to the page's ready mark (the first draw done), the
page's own split (decoding and indexing the data, the first draw), and the
time of a redraw after zooming in. Not part of CI's timed path (the 10^7
case takes minutes to generate and about 1 GB of browser memory).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_log  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def rmm_report():
    if os.environ.get("RMM_REPORT"):
        return os.environ["RMM_REPORT"]
    for profile in ("release", "debug"):
        exe = os.path.join(ROOT, "target", profile, "rmm-report")
        if os.path.exists(exe):
            return exe
    subprocess.run(["cargo", "build", "--release", "-p", "rmm-tools", "--bin", "rmm-report"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "rmm-report")


def measure(page, html):
    t = time.perf_counter()
    page.goto("file://" + html, timeout=600_000)
    page.wait_for_selector("body[data-ready='1']", timeout=600_000)
    ready = time.perf_counter() - t
    timings = page.evaluate("window.rmmView.timings")
    page.evaluate("window.rmmView.zoomTime(0.01)")
    page.wait_for_timeout(200)
    zoomed = page.evaluate("window.rmmView.timings.last_draw_ms")
    page.evaluate("window.rmmView.zoomTime(100)")
    page.wait_for_timeout(200)
    full = page.evaluate("window.rmmView.timings.last_draw_ms")
    return ready, timings, zoomed, full


def main(argv):
    from playwright.sync_api import sync_playwright

    args = [a for a in argv[1:]]
    folder = "/tmp/rmm-view-bench"
    if "--dir" in args:
        folder = args[args.index("--dir") + 1]
        del args[args.index("--dir"):args.index("--dir") + 2]
    counts = [int(a) for a in args] or [1_000_000, 10_000_000]
    os.makedirs(folder, exist_ok=True)
    exe = rmm_report()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), headless=True)
        for n in counts:
            log = os.path.join(folder, "events-%d.csv" % n)
            if not os.path.exists(log):
                gen_log.write_log(log, n)
            html = os.path.join(folder, "view-%d.html" % n)
            t = time.perf_counter()
            subprocess.run([exe, "view", log, "--out", html], check=True, stdout=subprocess.DEVNULL)
            build = time.perf_counter() - t
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            ready, timings, zoomed, full = measure(page, html)
            page.close()
            print("%9d events: page %.1f MB (built in %.1f s); load to ready %.2f s "
                  "(decode+index %.0f ms, first draw %.0f ms); redraw zoomed x100 %.0f ms, full %.0f ms"
                  % (n, os.path.getsize(html) / 1e6, build, ready, timings["load_ms"],
                     timings["ready_ms"] - timings["load_ms"], zoomed, full), flush=True)
        browser.close()


if __name__ == "__main__":
    main(sys.argv)
