#!/usr/bin/env python3
"""How fast the site's in-browser judge answers, in headless Chromium on this machine.

    python benchmarks/site_runner.py                  # builds site/_build if absent (exercises only)
    python benchmarks/site_runner.py --site DIR --exercise 180 --cold 3 --warm 9

Prints, with the machine described:
  cold   page load (fresh browser context, empty cache) -> first verdict, Run clicked on arrival;
         also when the runner was ready and how its start-up split (loadPyodide, site-packages, warm-up),
         and the bytes that went over the wire on that first visit (bodies as sent, compressed or not)
  returning  the same, on a visit after an earlier one: a browser started afresh on the profile (disk
         caches) of a first visit that stayed on the page --linger seconds after its verdict, as a reader
         does; Pyodide's compiled WebAssembly then comes from the browser's code cache
  warm   Run -> verdict on the same page (median of --warm runs of the reference solution)
  respawn  a loop that ignores KeyboardInterrupt: timeout verdict -> fresh worker ready
Goals on the 2-core development machine: first-visit transfer <= 15 MB, cold <= 1.5 s, returning <= 1.0 s,
warm <= 0.2 s. The load of the machine (os.getloadavg) is printed with each figure: on a shared machine it
says how much of the time was the browser's.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
import hostinfo  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]
STUBBORN_LOOP = "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass\n"
DONE = "!['', 'running'].includes(document.querySelector('[data-testid=verdict]').dataset.status)"


def load_build_module():
    spec = importlib.util.spec_from_file_location("site_build", ROOT / "site" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def set_code(page, code: str) -> None:
    page.evaluate("code => mpEditor.dispatch({changes: {from: 0, to: mpEditor.state.doc.length, insert: code}})", code)


def run(page, limit_s: int) -> str:
    page.click("[data-testid=run]")
    page.wait_for_function(DONE, timeout=(limit_s + 30) * 1000)
    return page.get_attribute("[data-testid=verdict]", "data-status")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "site" / "_build", help="built site (default site/_build)")
    parser.add_argument("--exercise", type=int, default=180)
    parser.add_argument("--cold", type=int, default=3, help="cold loads to measure")
    parser.add_argument("--warm", type=int, default=9, help="warm re-runs to measure")
    parser.add_argument("--returning", type=int, default=3, help="returning visits to measure")
    parser.add_argument("--linger", type=float, default=10.0,
                        help="seconds the first visit stays on the page after its verdict (default 10)")
    parser.add_argument("--no-respawn", action="store_true", help="skip the respawn measurement (it waits out a time limit)")
    args = parser.parse_args()

    build = load_build_module()
    if not (args.site / "exercises" / f"{args.exercise}.html").is_file():
        subprocess.run([sys.executable, str(ROOT / "site" / "build.py"), "--out", str(args.site), "--only-exercises"],
                       check=True)
    sys.path.insert(0, str(ROOT))
    from practice.judging.exercises import find

    exercise = find(args.exercise)
    solution = exercise.file("solution.py").read_text(encoding="utf-8")
    server = build.make_server(args.site.resolve())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/exercises/{exercise.id}.html"
    pyodide_version = json.loads((ROOT / "site/web/node_modules/pyodide/package.json").read_text())["version"]

    from playwright.sync_api import sync_playwright

    def first_visit(context):
        """Open the exercise, run the reference solution on arrival; (verdict ms, ready ms, phases, status, bytes)."""
        sizes = []
        context.on("requestfinished", lambda request: sizes.append(request.sizes()))
        page = context.pages[0] if context.pages else context.new_page()
        page.goto(url)
        set_code(page, solution)
        status = run(page, exercise.timeout)
        t = page.evaluate("window.mpTimings")
        tests = page.locator("[data-testid=results] li[data-name]").count()
        wire = sum(s["responseBodySize"] + s["responseHeadersSize"] for s in sizes)
        return page, (t["verdicts"][0], t["ready"][0], t["phases"], f"{status}, {tests} tests", wire, os.getloadavg()[0])

    cold, returning, warm, respawn = [], [], [], None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        print(f"machine:  {hostinfo.describe()}")
        print(f"browser:  headless Chromium {browser.version}; Pyodide {pyodide_version}; exercise {exercise.id}")
        for i in range(args.cold):
            context = browser.new_context()
            page, result = first_visit(context)
            cold.append(result)
            if i == args.cold - 1:   # keep the last page for the warm and respawn measurements
                for _ in range(args.warm):
                    run(page, exercise.timeout)
                warm = page.evaluate("window.mpTimings.runs")[1:]
                if not args.no_respawn:
                    set_code(page, STUBBORN_LOOP)
                    run(page, exercise.timeout)
                    page.wait_for_function("window.mpTimings.ready.length === 2", timeout=60000)
                    t = page.evaluate("window.mpTimings")
                    respawn = t["ready"][1] - t["verdicts"][-1]
            context.close()
        browser.close()
        if args.returning:
            with tempfile.TemporaryDirectory(prefix="site-runner-profile-") as profile:
                def visit():   # a browser of its own on the profile: what is left is only what is on disk
                    context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                    try:
                        page, result = first_visit(context)
                        return page, result
                    except BaseException:
                        context.close()
                        raise

                page, _ = visit()
                page.wait_for_timeout(args.linger * 1000)   # the reader reads the verdict; caches are written
                page.context.close()
                for _ in range(args.returning):
                    page, result = visit()
                    returning.append(result)
                    page.wait_for_timeout(1000)
                    page.context.close()
    server.shutdown()

    def report(name, visits):
        for verdict_ms, ready_ms, phases, status, wire, load in visits:
            split = ", ".join(f"{k} {v}" for k, v in phases.items())
            print(f"{name + ':':9} first verdict {verdict_ms / 1000:.2f} s after navigation ({status}); "
                  f"runner ready at {ready_ms / 1000:.2f} s [worker: {split} ms]; {wire / 1e6:.1f} MB transferred; "
                  f"load {load:.1f}")

    report("cold", cold)
    print(f"cold:     median first verdict {statistics.median(c[0] for c in cold) / 1000:.2f} s (goal <= 1.5 s); "
          f"first-visit transfer {statistics.median(c[4] for c in cold) / 1e6:.1f} MB (goal <= 15 MB)")
    if returning:
        report("returning", returning)
        print(f"returning: median first verdict {statistics.median(r[0] for r in returning) / 1000:.2f} s "
              f"(goal <= 1.0 s) over {len(returning)} visits after one that stayed {args.linger:g} s")
    if warm:
        print(f"warm:     median Run -> verdict {statistics.median(warm) / 1000:.3f} s over {len(warm)} runs "
              f"(min {min(warm) / 1000:.3f}, max {max(warm) / 1000:.3f}; goal <= 0.2 s)")
    if respawn is not None:
        print(f"respawn:  timeout verdict -> fresh worker ready {respawn / 1000:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
