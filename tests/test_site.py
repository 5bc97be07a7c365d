"""The built site in headless Chromium: the in-browser judge, the editor, the chapters, offline-ness.

The site is built once per session (``site/build.py`` in a subprocess, notebooks executed or taken
from the content-hash cache) and served on 127.0.0.1 with the COOP/COEP headers. Every test's
browser context records every request and console error; the fixture fails the test when a
request goes anywhere but 127.0.0.1 or the page logs an error.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from practice.exercises import discover  # noqa: E402

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]
EXERCISES = discover()
RUNNABLE = [e for e in EXERCISES if e.pure_python]
LOCAL_ONLY = [e for e in EXERCISES if not e.pure_python]
VERDICT = "[data-testid=verdict]"
PENDING = ("", "running")
HANG_MARGIN_S = 15   # a verdict later than limit + this is a hang, not a slow machine


def load_build_module():
    spec = importlib.util.spec_from_file_location("site_build", ROOT / "site" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def site_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, str(ROOT / "site" / "build.py"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"site build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return out


@pytest.fixture(scope="session")
def base_url(site_dir):
    server = load_build_module().make_server(site_dir)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture(scope="session")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Recorder:
    """Every request and console error of one browser context."""

    def __init__(self, context):
        self.requests: list[str] = []
        self.errors: list[str] = []
        context.on("request", lambda request: self.requests.append(request.url))

    def watch(self, page):
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        return page


@pytest.fixture
def session(browser, base_url):
    """(page, recorder) in a fresh context (empty localStorage); checks offline-ness afterwards."""
    context = browser.new_context()
    recorder = Recorder(context)
    page = recorder.watch(context.new_page())
    yield page, recorder
    context.close()
    foreign = [u for u in recorder.requests if urlsplit(u).hostname != "127.0.0.1" and not u.startswith("data:")]
    assert not foreign, f"requests left 127.0.0.1: {foreign}"
    assert not recorder.errors, recorder.errors


def editor_text(page) -> str:
    return page.evaluate("window.mpEditor.state.doc.toString()")


def type_code(page, code: str) -> None:
    """Replace the editor's text the way a paste does (select all, then insert)."""
    page.click(".cm-content")
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(code)
    assert editor_text(page) == code


def run_and_wait(page, limit_s: int) -> dict:
    page.click("[data-testid=run]")
    page.wait_for_function(f"!{list(PENDING)}.includes(document.querySelector('{VERDICT}').dataset.status)",
                           timeout=(limit_s + HANG_MARGIN_S) * 1000)
    return {
        "status": page.get_attribute(VERDICT, "data-status"),
        "stop": page.get_attribute(VERDICT, "data-stop"),
        "tests": page.eval_on_selector_all("[data-testid=results] li",
                                           "items => items.map(li => [li.dataset.name, li.dataset.outcome])"),
    }


class LocalJudge:
    """``python practice/judge.py <id> <file> --json`` for the same code, started in the background
    so that it runs while the browser works."""

    def __init__(self, exercise, source: str, folder: Path):
        file = folder / f"{exercise.id}_{len(list(folder.iterdir()))}.py"
        file.write_text(source, encoding="utf-8")
        self.proc = subprocess.Popen([sys.executable, "practice/judge.py", str(exercise.id), str(file), "--json"],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def verdict(self) -> dict:
        out, err = self.proc.communicate(timeout=120)
        try:
            return json.loads(out)
        except json.JSONDecodeError:
            pytest.fail(f"judge.py --json printed no JSON (exit {self.proc.returncode}):\n{out}\n{err}")


@pytest.mark.parametrize("exercise", RUNNABLE, ids=lambda e: str(e.id))
def test_solution_accepted_starter_not_and_verdicts_match_local_judge(session, base_url, exercise, tmp_path):
    page, recorder = session
    page.goto(f"{base_url}exercises/{exercise.id}.html")
    assert editor_text(page) == exercise.file("starter.py").read_text(encoding="utf-8")
    cases = [(name, exercise.file(name).read_text(encoding="utf-8")) for name in ("solution.py", "starter.py")]
    local = {name: LocalJudge(exercise, source, tmp_path) for name, source in cases}
    for name, source in cases:
        type_code(page, source)
        browser_verdict = run_and_wait(page, exercise.timeout)
        local_verdict = local[name].verdict()
        assert (browser_verdict["status"] == "accepted") is (name == "solution.py"), (name, browser_verdict)
        assert browser_verdict["status"] == local_verdict["status"], name
        assert browser_verdict["tests"] == [[t["name"], t["outcome"]] for t in local_verdict["tests"]], name
    # The worker (not just the page) was observed: Pyodide itself came from this server.
    assert any(u.endswith("/pyodide/pyodide.asm.wasm") for u in recorder.requests)


def test_infinite_loops_time_out_and_the_next_run_works(session, base_url):
    """A plain loop is stopped by the soft interrupt; one that swallows KeyboardInterrupt costs the
    worker, which is replaced. Either way the verdict is ``timeout`` and the next run is judged."""
    page, _ = session
    exercise = RUNNABLE[0]
    page.goto(f"{base_url}exercises/{exercise.id}.html")
    plain = "while True:\n    pass\n"
    stubborn = "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass\n"
    for code, stop, workers in ((plain, "interrupted", 1), (stubborn, "terminated", 2)):
        type_code(page, code)
        verdict = run_and_wait(page, exercise.timeout)
        assert (verdict["status"], verdict["stop"]) == ("timeout", stop)
        type_code(page, exercise.file("solution.py").read_text(encoding="utf-8"))
        assert run_and_wait(page, exercise.timeout)["status"] == "accepted"
        assert page.evaluate("window.mpTimings.ready.length") == workers


def test_code_survives_reload_and_reset_can_be_undone(session, base_url):
    page, _ = session
    exercise = RUNNABLE[0]
    starter = exercise.file("starter.py").read_text(encoding="utf-8")
    mine = "# my attempt\n" + starter.replace("\n", "\n# edited\n", 1)
    page.goto(f"{base_url}exercises/{exercise.id}.html")
    type_code(page, mine)
    page.reload()
    assert editor_text(page) == mine
    page.click("[data-testid=reset]")
    assert editor_text(page) == starter
    page.click("[data-testid=undo-reset]")
    assert editor_text(page) == mine
    # The language switch shows the English statement and title, and is remembered.
    page.click("[data-testid=lang]")
    assert page.locator(".statement h1 .en").is_visible() and not page.locator(".statement h1 .zh").is_visible()
    page.reload()
    assert page.locator(".statement h1 .en").is_visible()


def test_index_lists_every_exercise_with_the_visitors_status(session, base_url):
    page, _ = session
    exercise = RUNNABLE[0]
    page.goto(f"{base_url}exercises/{exercise.id}.html")
    type_code(page, exercise.file("solution.py").read_text(encoding="utf-8"))
    page.keyboard.press("ControlOrMeta+Enter")   # the shortcut runs the tests too
    page.wait_for_function(f"document.querySelector('{VERDICT}').dataset.status === 'accepted'",
                           timeout=(exercise.timeout + HANG_MARGIN_S) * 1000)
    page.goto(base_url)
    rows = page.eval_on_selector_all("[data-testid=exercise-table] tbody tr",
                                     "rows => rows.map(r => r.cells[0].textContent.trim())")
    assert rows == [str(e.id) for e in EXERCISES]
    assert page.get_attribute(f"[data-status-for='{exercise.id}']", "data-status") == "accepted"
    others = [e for e in EXERCISES if e.id != exercise.id]
    if others:
        assert page.get_attribute(f"[data-status-for='{others[0].id}']", "data-status") == ""


@pytest.mark.parametrize("exercise", LOCAL_ONLY, ids=lambda e: str(e.id))
def test_exercise_needing_torch_shows_the_local_command(session, base_url, exercise):
    page, _ = session
    page.goto(f"{base_url}exercises/{exercise.id}.html")
    assert page.locator("[data-testid=run]").count() == 0
    assert page.inner_text("[data-testid=judge-command]") == f"python practice/judge.py {exercise.id}"


def test_chapter_one_shows_its_figure(session, base_url, site_dir):
    page, _ = session
    pages = sorted((site_dir / "chapters").glob("01_*.html"))
    assert pages, "chapter 1 was not built (notebooks/01_*.ipynb missing?)"
    page.goto(f"{base_url}chapters/{pages[0].name}")
    page.wait_for_load_state("load")
    images = page.eval_on_selector_all(".notebook img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
    assert images, "chapter 1 has no figure"
    assert all(complete and width > 0 for complete, width in images), images
    assert page.locator(".notebook details").count() > 0   # the self-test answers stay collapsible
    next_link = page.locator(".pager a[rel=next]").first
    if next_link.count():
        next_link.click()
        page.wait_for_load_state("load")
        assert "/chapters/" in page.url


def test_without_the_snapshot_the_runner_starts_from_scratch(browser, base_url):
    context = browser.new_context()
    context.route("**/runtime/snapshot.bin", lambda route: route.abort())
    try:
        page = context.new_page()
        exercise = RUNNABLE[0]
        page.goto(f"{base_url}exercises/{exercise.id}.html")
        type_code(page, exercise.file("solution.py").read_text(encoding="utf-8"))
        assert run_and_wait(page, exercise.timeout)["status"] == "accepted"
        assert "load" in page.evaluate("window.mpTimings.phases")   # not "restore"
    finally:
        context.close()


def test_a_runner_that_cannot_start_is_reported_not_awaited(browser, base_url):
    context = browser.new_context()
    context.route("**/runtime/site-packages.zip", lambda route: route.abort())
    try:
        page = context.new_page()
        page.goto(f"{base_url}exercises/{RUNNABLE[0].id}.html")
        page.wait_for_selector("[data-testid=runner][data-state=failed]", timeout=60000)
        verdict = run_and_wait(page, RUNNABLE[0].timeout)
        assert verdict["status"] == "error"
        assert "failed to start" in page.inner_text(VERDICT)
    finally:
        context.close()
