"""site/build.py without a browser: notebook execution and its cache, rendering, serving, offline check."""
from __future__ import annotations

import base64
import importlib.util
import json
import re
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# A 1x1 PNG, standing in for a matplotlib figure.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5f6e8590000000049454e44ae426082")).decode()


@pytest.fixture(scope="module")
def build():
    spec = importlib.util.spec_from_file_location("site_build", ROOT / "site" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cache(build, tmp_path, monkeypatch):
    monkeypatch.setattr(build, "CACHE", tmp_path / "cache")
    return tmp_path / "cache"


def notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 第一章 标题")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def test_a_broken_cell_fails_the_build_naming_notebook_and_cell(build, cache, tmp_path):
    path = notebook(tmp_path / "07_broken.ipynb", "x = 1", "print('ok')", "1 / 0")
    with pytest.raises(build.BuildError) as err:
        build.execute_notebook(path, execute=True)
    message = str(err.value)
    assert "07_broken.ipynb" in message and "cell 4" in message and "code cell 3" in message
    assert "ZeroDivisionError" in message and "1 / 0" in message
    assert not list(cache.rglob("*.ipynb"))   # nothing half-executed is cached


def test_execution_is_cached_by_content_and_no_execute_reuses_it(build, cache, tmp_path, monkeypatch):
    path = notebook(tmp_path / "08_ok.ipynb", "print(6 * 7)")
    executed = build.execute_notebook(path, execute=True)
    assert executed.cells[1].outputs[0]["text"] == "42\n"

    def no_kernel(*args, **kwargs):
        raise AssertionError("a cached notebook was executed again")

    import nbclient

    monkeypatch.setattr(nbclient, "NotebookClient", no_kernel)
    assert build.execute_notebook(path, execute=True).cells[1].outputs[0]["text"] == "42\n"
    notebook(path, "print(6 * 7)  # edited")   # changed: its key no longer matches
    stale = build.execute_notebook(path, execute=False)
    assert stale.cells[1].outputs[0]["text"] == "42\n"   # --no-execute falls back to the older outputs
    with pytest.raises(AssertionError, match="executed again"):
        build.execute_notebook(path, execute=True)


def test_rendered_chapter_keeps_figures_answers_and_highlighting_and_loads_nothing(build, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 标题\n\n1. 问题？\n\n<details><summary>答案</summary>\n\n**是** $x^2$\n\n</details>\n"),
                nbformat.v4.new_code_cell("import math", outputs=[nbformat.v4.new_output(
                    "display_data", data={"image/png": PNG, "text/plain": "<Figure>"})])]
    html = build.render_notebook(nb)
    assert f"data:image/png;base64,{PNG}" in html
    assert "<details><summary>答案</summary>" in html and "<strong>是</strong>" in html
    assert '<span class="kn">import</span>' in html   # pygments, on the server
    assert build.chapter_title(nb, "x") == "标题"
    out = tmp_path / "site"
    (out / "chapters").mkdir(parents=True)
    (out / "chapters" / "01.html").write_text(f"<html><body>{html}</body></html>")
    build.check_self_contained(out)   # nbconvert's require.js / MathJax references are gone
    (out / "chapters" / "02.html").write_text('<script src="https://cdn.example.org/x.js"></script>')
    with pytest.raises(build.BuildError, match="02.html would load from another host"):
        build.check_self_contained(out)


def test_server_binds_localhost_with_isolation_headers_and_wasm_type(build, tmp_path):
    (tmp_path / "a.wasm").write_bytes(b"\0asm")
    (tmp_path / "b.mjs").write_text("export {}")
    server = build.make_server(tmp_path)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/a.wasm") as response:
            assert response.headers["Content-Type"] == "application/wasm"
            assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
            assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/b.mjs") as response:
            assert response.headers["Content-Type"].startswith("text/javascript")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_browser_exercises_may_import_only_the_standard_library_and_pytest(build, tmp_path):
    from practice.judging.exercises import Exercise

    folder = tmp_path / "189_demo"
    folder.mkdir()
    (folder / "starter.py").write_text("import math\n")
    (folder / "solution.py").write_text("from collections import Counter\nfrom . import sibling\n")
    (folder / "test.py").write_text("import pytest\nfrom submission import f\n")
    exercise = Exercise(id=189, slug="demo", path=folder, title="t", title_en="t", chapter=1,
                        difficulty="easy", requires=(), timeout=10, body="")
    build.check_browser_imports(exercise)
    (folder / "solution.py").write_text("import json\n\nimport numpy as np\n")
    with pytest.raises(build.BuildError, match=r"189_demo/solution.py:3 imports numpy"):
        build.check_browser_imports(exercise)


def test_output_folder_not_made_by_the_build_is_never_deleted(build, tmp_path):
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "thesis.txt").write_text("irreplaceable")
    with pytest.raises(build.BuildError, match="not made by this script"):
        build.build(mine)
    assert (mine / "thesis.txt").read_text() == "irreplaceable"


@pytest.mark.parametrize("name, text", [
    ("assets/style.css", '@import "https://fonts.example.org/css2?family=Noto+Sans+SC";'),
    ("assets/style.css", "@font-face { src: url(//fonts.example.org/x.woff2); }"),
    ("pyodide/loader.mjs", 'const lock = await fetch("https://cdn.example.org/lock.json");'),
    ("assets/app.js", "//# sourceMappingURL=https://maps.example.org/app.js.map"),
])
def test_offline_check_covers_stylesheets_fonts_modules_and_source_maps(build, tmp_path, name, text):
    (tmp_path / name).parent.mkdir(parents=True)
    (tmp_path / name).write_text(text)
    with pytest.raises(build.BuildError, match="would load from another host"):
        build.check_self_contained(tmp_path)


def rendered_text(markup: str) -> str:
    """The text a reader sees, outside code, pre, script and style elements."""
    from html.parser import HTMLParser

    class Collect(HTMLParser):
        def __init__(self):
            super().__init__()
            self.depth, self.parts = 0, []

        def handle_starttag(self, tag, attrs):
            self.depth += tag in ("code", "pre", "script", "style")

        def handle_endtag(self, tag):
            self.depth -= tag in ("code", "pre", "script", "style")

        def handle_data(self, data):
            if not self.depth:
                self.parts.append(data)

    collect = Collect()
    collect.feed(markup)
    return "".join(collect.parts)


def test_bold_by_chinese_punctuation_and_markdown_in_details_render(build):
    text = build.fix_markdown("**注意：**这里 `a**b**` 和 **ok** 。\n1. 问题\n   <details><summary>答案</summary>\n   `x` **是**\n   </details>\n")
    assert text.startswith("<strong>注意：</strong>这里 `a**b**` 和 **ok**")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text)]
    shown = rendered_text(build.render_notebook(nb))
    assert "**" not in shown and "`" not in shown


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_chapters_show_no_literal_markdown(build, path):
    nb = nbformat.read(path, as_version=4)
    nb.cells = [cell for cell in nb.cells if cell.cell_type == "markdown"]
    shown = rendered_text(build.render_notebook(nb))
    for mark in ("**", "`"):
        at = shown.find(mark)
        assert at < 0, f"literal {mark} in the rendered text: ...{shown[max(0, at - 40):at + 40]}..."


def test_precompressed_files_are_served_to_browsers_that_accept_gzip(build, tmp_path):
    import gzip

    (tmp_path / "big.wasm").write_bytes(b"\0asm" + b"a" * 10000)
    (tmp_path / "tiny.js").write_text("x")
    build.compress(tmp_path)
    assert (tmp_path / "big.wasm.gz").is_file() and not (tmp_path / "tiny.js.gz").exists()   # no gain, no .gz
    server = build.make_server(tmp_path)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/big.wasm"
        request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip, br"})
        with urllib.request.urlopen(request) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert response.headers["Content-Type"] == "application/wasm"
            assert gzip.decompress(response.read()) == (tmp_path / "big.wasm").read_bytes()
        with urllib.request.urlopen(url) as response:   # no Accept-Encoding: the file as it is
            assert response.headers["Content-Encoding"] is None and response.read()[:4] == b"\0asm"
        # A returning visit revalidates what it has: 304 for the compressed file and the plain one alike.
        for encoding in ("gzip", "identity"):
            with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept-Encoding": encoding})) as response:
                modified = response.headers["Last-Modified"]
            assert modified, encoding
            again = urllib.request.Request(url, headers={"Accept-Encoding": encoding, "If-Modified-Since": modified})
            with pytest.raises(urllib.error.HTTPError) as answer:   # urllib reports a 304 as an error
                urllib.request.urlopen(again)
            assert answer.value.code == 304, encoding
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_figures_get_alt_text_from_their_title_and_printed_source_is_highlighted(build):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nax.set_title('Latency vs batch')", outputs=[
                    nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]),
                nbformat.v4.new_code_cell("plt.plot([1])", outputs=[
                    nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]),
                nbformat.v4.new_code_cell("print(inspect.getsource(f))", outputs=[
                    nbformat.v4.new_output("stream", name="stdout", text="def f(x):\n    return x\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="def is not code\n")])]
    html = build.render_notebook(nb)
    assert 'alt="Figure: Latency vs batch"' in html and 'alt="Figure drawn by the code above"' in html
    assert '<span class="k">def</span>' in html and "def is not code" in html


def test_engine_page_has_a_row_per_exercise_with_engine_parts(build, tmp_path):
    from practice.judging.exercises import Exercise

    def exercise(id_, requires, engine):
        return Exercise(id=id_, slug=f"demo{id_}", path=tmp_path, title=f"题{id_}", title_en=f"Ex {id_}", chapter=2,
                        difficulty="easy", requires=requires, timeout=10, body="", engine=engine)

    exercises = [exercise(201, (), ("mini_platform.kv_cache.hash_block", "mini_platform.kv_cache.find_cached_prefix")),
                 exercise(202, (), ()),
                 exercise(203, ("torch",), ("mini_platform.ops.cpu.layernorm.rms_norm",))]
    build.build_engine_page(tmp_path, build.templates(), exercises)
    html = (tmp_path / "engine.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr data-part="(\d+)">(.*?)</tr>', html, re.DOTALL)
    assert [id_ for id_, _ in rows] == ["201", "203"]   # 202 declares no part
    pure, torch = rows[0][1], rows[1][1]
    assert ("<code>mini_platform.<wbr>kv_cache.<wbr>hash_block</code><br>"   # breaks only after a dot
            "<code>mini_platform.<wbr>kv_cache.<wbr>find_cached_prefix</code>") in pure
    assert 'href="exercises/201.html"' in pure and "题201" in pure and "Ex 201" in pure
    assert 'data-owner-for="201"' in pure and "python practice/judge.py 201" not in pure   # owner from progress
    assert 'data-owner-for' not in torch and '<code class="command-inline">python practice/judge.py 203</code>' in torch
    assert 'id="engine-command" data-testid="engine-command">python practice/judge.py engine<' in html
    assert "python practice/judge.py engine --parts 201,203" in html


@pytest.fixture
def browser_runner(tmp_path, monkeypatch):
    """site/web/src/browser_runner.py imported under CPython, with what it patches restored afterwards."""
    import pluggy._hooks
    from _pytest import fixtures
    from _pytest.assertion import rewrite

    monkeypatch.syspath_prepend(str(ROOT / "site" / "web" / "src"))
    monkeypatch.syspath_prepend(str(ROOT / "practice" / "judging"))   # flat, as the site serves judge_core and render
    monkeypatch.setattr(rewrite, "_rewrite_test", rewrite._rewrite_test)
    monkeypatch.setattr(pluggy._hooks, "varnames", pluggy._hooks.varnames)
    monkeypatch.setattr(fixtures, "getfuncargnames", fixtures.getfuncargnames)
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    monkeypatch.delitem(sys.modules, "browser_runner", raising=False)
    import browser_runner

    monkeypatch.setattr(browser_runner, "INPUTS", tmp_path / "inputs")
    monkeypatch.setattr(browser_runner, "RUNS", tmp_path / "runs")
    return browser_runner


RUNNER_TEST = ("from submission import f\n\ndef test_ok():\n    assert f(1) == 2\n\n"
               "def test_wrong():\n    assert f(2) == [3, 4]\n\ndef test_raises():\n    f(None)\n")
RUNNER_SUBMISSION = "def f(x):\n    return x + 1\n"


def _no_rewrite(*args):
    raise AssertionError("rewritten again")


def _timeless(verdict: dict) -> dict:
    del verdict["verdict"]["duration"]
    for t in verdict["verdict"]["tests"]:
        t["duration"] = 0
    return verdict


def test_browser_runner_reuses_a_rewritten_test_file_with_the_same_verdict(browser_runner, monkeypatch):
    """site/web/src/browser_runner.py keeps pytest's assertion rewriting of a test file between runs
    (run here under CPython): after prepare() or a first run, a run rewrites nothing and gives the same
    verdict, tracebacks and compared values included, pointing at the new run's file."""
    test, submission = RUNNER_TEST, RUNNER_SUBMISSION
    first = json.loads(browser_runner.run(test, submission))
    browser_runner.judge_core._REWRITTEN.clear()
    browser_runner.prepare(test)   # as the worker does once it is ready
    monkeypatch.setattr(browser_runner.judge_core, "_rewrite_test", _no_rewrite)
    prepared = json.loads(browser_runner.run(test, submission))
    second = json.loads(browser_runner.run(test, submission))
    assert _timeless(first) == _timeless(prepared) == _timeless(second)
    tests = {t["name"]: t for t in second["verdict"]["tests"]}
    assert [tests[n]["outcome"] for n in ("test_ok", "test_wrong", "test_raises")] == ["passed", "failed", "error"]
    assert tests["test_wrong"]["compare"]["left"] == "3" and "test.py:7 in test_wrong" in tests["test_wrong"]["details"]
    assert "test.py:10 in test_raises" in tests["test_raises"]["details"]
    assert "submission.py:2 in f" in tests["test_raises"]["details"]
    other = json.loads(browser_runner.run(test.replace("[3, 4]", "[3, 5]"), submission))   # new bytes: rewritten
    assert other["verdict"]["status"] == "error" and "rewritten again" in json.dumps(other)


def test_browser_runner_uses_a_test_file_rewritten_at_build_time_only_for_its_own_bytes(browser_runner, monkeypatch):
    """What compile_test makes (rewrite.mjs, at build time) gives prepare() the same code as rewriting
    in the worker: the same verdict with nothing rewritten; made from other bytes, it is not used."""
    test, submission = RUNNER_TEST, RUNNER_SUBMISSION
    first = json.loads(browser_runner.run(test, submission))
    compiled = browser_runner.compile_test(test)
    other_test = test.replace("[3, 4]", "[3, 5]")
    other = browser_runner.compile_test(other_test)
    browser_runner.judge_core._REWRITTEN.clear()
    monkeypatch.setattr(browser_runner.judge_core, "_rewrite_test", _no_rewrite)
    browser_runner.prepare(test, compiled)
    assert _timeless(json.loads(browser_runner.run(test, submission))) == _timeless(first)
    browser_runner.prepare(other_test, compiled)   # another file's: ignored, so rewritten (here: refused)
    verdict = json.loads(browser_runner.run(other_test, submission))
    assert verdict["verdict"]["status"] == "error" and "rewritten again" in json.dumps(verdict)
    browser_runner.prepare(other_test, other)
    tests = json.loads(browser_runner.run(other_test, submission))["verdict"]["tests"]
    assert [t["outcome"] for t in tests] == ["passed", "failed", "error"] and "[3, 5]" in tests[1]["message"]


def test_browser_runner_remembers_argument_names_only_of_site_packages_functions(browser_runner):
    """The argument names pluggy reads are remembered for pytest's own functions (the same each run)
    and never for a function of a run's files, which must not outlive its run."""
    import pluggy._hooks
    import _pytest.runner

    assert pluggy._hooks.varnames(_pytest.runner.pytest_runtest_protocol) == (("item", "nextitem"), ())
    namespace: dict = {}
    exec(compile("def hook(item, call=None):\n    pass\n", str(browser_runner.RUNS / "run-x" / "test.py"), "exec"),
         namespace)
    assert pluggy._hooks.varnames(namespace["hook"]) == (("item",), ("call",))
    cached = pluggy._hooks.varnames.__closure__[0].cell_contents   # the wrapper's cache
    functions = {key[0] for key in cached}
    assert _pytest.runner.pytest_runtest_protocol in functions and namespace["hook"] not in functions


# What the chapters' closing cells read: the judge's progress (run_for_chapter -> judge.py engine -> choose)
# and the capstone's project (chapter 9).
WORKSPACE_PROBE = f"""
import sys
sys.path.insert(0, {str(ROOT / "practice")!r})
from capstone import harness
from judging import engine_parts, exercises
from judging.progress import Progress

progress = Progress(exercises.PRACTICE_DIR)
print(progress.workspace, sorted(p.name for p in progress.workspace.glob("*")), progress.load())
print(engine_parts.choose([exercises.find(194)], progress, "en"))
print(harness.learner_project(), (harness.learner_project() / "pyproject.toml").is_file())
"""


def test_notebooks_execute_with_an_empty_workspace_of_their_own(build, cache, tmp_path, monkeypatch):
    """The builder's workspace (here a folder standing in for practice/workspace/, with an accepted
    part and a capstone project) never reaches a built chapter: not its files, verdicts or paths."""
    from practice.judging import exercises, progress

    monkeypatch.delenv(progress.WORKSPACE_ENV, raising=False)   # the package's own default stays
    assert progress.Progress(exercises.PRACTICE_DIR).workspace == exercises.PRACTICE_DIR / "workspace"
    assert progress.Progress(exercises.PRACTICE_DIR).state_file == exercises.PRACTICE_DIR / ".judge_state.json"
    builder = tmp_path / "builders-workspace"
    part = builder / f"{exercises.find(194).name}.py"
    (builder / "lumen-npu").mkdir(parents=True)
    (builder / "lumen-npu" / "pyproject.toml").write_text("[project]\nname = 'lumen-npu'\n")
    part.write_text("# BUILDER-MARKER\n" + exercises.find(194).file("solution.py").read_text())
    (builder / ".judge_state.json").write_text(json.dumps({"194": {
        "status": "accepted", "passed": 1, "total": 1, "file": str(part), "sha256": progress.file_digest(part)}}))
    monkeypatch.setenv(progress.WORKSPACE_ENV, str(builder))
    assert progress.Progress(exercises.PRACTICE_DIR).load()["194"]["status"] == "accepted"   # it is honoured
    html = build.render_notebook(build.execute_notebook(notebook(tmp_path / "05_probe.ipynb", WORKSPACE_PROBE), True))
    assert "no_file" in html and "lumen-npu False" in html   # as a new reader
    for leak in ("BUILDER-MARKER", "accepted", str(builder), "builders-workspace"):
        assert leak not in html, f"the built chapter shows {leak!r} from the builder's workspace:\n{html}"


def local_exercise_page(build, **settings) -> str:
    """The page of an exercise judged locally (it needs torch), rendered with the build's ``settings``."""
    from practice.judging.exercises import discover

    ex = next(e for e in discover() if not e.pure_python)
    return build.templates(**settings).get_template("exercise.html.j2").render(
        root="../", ex=ex, zh="", en="", shared="", data="{}", starter="", chapter=None, section="", tests="",
        solution="", hints=[], prev=None, next=None)


def test_torch_pages_say_how_to_get_the_course_from_the_builds_setting_or_an_archive(build):
    def setup(html: str) -> str:
        return re.search(r'<pre data-testid="setup"><code id="setup-command">(.*?)</code></pre>', html, re.DOTALL).group(1)

    address = "https://github.com/example/mini-platform.git"
    cloned = local_exercise_page(build, repository=address)
    assert setup(cloned).splitlines() == [f"git clone {address} mini-platform", "cd mini-platform",
                                          "pip install -r requirements.txt"]
    archive = local_exercise_page(build)   # no setting: commands that work in an unpacked archive
    assert setup(archive) == "pip install -r requirements.txt" and "git clone" not in archive
    for html in (cloned, archive):   # said in both languages, no placeholder
        assert re.search(r'<p class="zh" lang="zh-CN">[^<]*(克隆|压缩包)', html)
        assert re.search(r'<p class="en" lang="en">[^<]*(Clone|archive)', html)
        assert "&lt;" not in setup(html) and "<this" not in html
    for bad in ("<this course's repository>", "github.com/x/y", "https://", "two words"):
        with pytest.raises(build.BuildError, match="not an address git clone takes"):
            build.templates(repository=bad)


def test_every_chapter_has_an_english_summary_shown_at_its_top_in_english_mode(build, monkeypatch, tmp_path):
    from markupsafe import escape

    stems = [path.stem for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    english = build.english_summaries(stems)
    for stem in stems:
        assert english[stem]["title"].startswith(f"Chapter {int(stem[:2])}. ")
        assert len(english[stem]["summary"].split()) >= 60, f"{stem}: a summary is a paragraph"
    chapter = {"number": 1, "stem": stems[0], "title": "第 1 章", "href": "", "body": "<p>正文</p>",
               "title_en": english[stems[0]]["title"], "summary_en": english[stems[0]]["summary"]}
    html = build.templates().get_template("chapter.html.j2").render(root="../", chapter=chapter, prev=None, next=None,
                                                                   exercises=[])
    aside = re.search(r'<aside class="en chapter-summary" lang="en"[^>]*>(.*?)</aside>', html, re.DOTALL).group(1)
    assert "written in Chinese" in aside and str(escape(english[stems[0]]["summary"])) in " ".join(aside.split())
    assert html.index("chapter-summary") < html.index("<p>正文</p>")   # at the top
    table = tmp_path / "chapters_en.toml"
    table.write_text('["01_x"]\ntitle = "Chapter 1. X"\nsummary = "x"\n')
    monkeypatch.setattr(build, "CHAPTERS_EN", table)
    with pytest.raises(build.BuildError, match="no English title and summary for 02_y"):
        build.english_summaries(["01_x", "02_y"])
