#!/usr/bin/env python3
"""Build the course site: chapters from executed notebooks, and exercises judged in the browser.

    python site/build.py                   # build into site/_build
    python site/build.py --serve           # build, then serve on http://127.0.0.1:8000/
    python site/build.py --no-execute      # reuse the cached notebook execution
    python site/build.py --only-exercises  # skip the chapters (fast, for work on exercises)
    python site/build.py --repository https://github.com/OWNER/mini-platform.git   # the address torch pages show

The build installs its own front-end dependencies (``npm ci`` in site/web when node_modules is
missing), downloads the pinned pure-Python wheels pytest needs (``pip download``, cached in
site/.cache/wheels), byte-compiles Pyodide's standard library and those wheels with Pyodide itself
under Node and snapshots a warmed-up interpreter (so a browser worker starts in well under a
second instead of importing pytest from scratch), bundles the CodeMirror editor with esbuild, executes the notebooks with nbclient
(cached by content hash in site/.cache/notebooks) and renders every page. The result requests
nothing from any host but the one serving it.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
WEB = SITE / "web"
CACHE = SITE / ".cache"
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS_EN = WEB / "chapters_en.toml"   # the chapters' English titles and summaries
sys.path.insert(0, str(ROOT))

from practice.judging.exercises import Exercise, ExerciseError, discover, split_statement  # noqa: E402
from practice.judging import render  # noqa: E402
from practice.judging.progress import WORKSPACE_ENV  # noqa: E402

# The wheels `import pytest` needs inside Pyodide. pytest is the version requirements.txt pins, so the
# local judge and the browser run the same pytest; the others are at the versions of Pyodide's own
# lockfile (node_modules/pyodide/pyodide-lock.json). Pyodide's CDN is not used: these come from PyPI.
WHEELS = {
    "pytest-9.0.3-py3-none-any.whl": "2c5efc453d45394fdd706ade797c0a81091eccd1d6e4bccfcd476e2b8e0ab5d9",
    "pluggy-1.6.0-py3-none-any.whl": "e920276dd6813095e9377c0bc5566d94c932c33b27a3e3945d8389c374dd4746",
    "iniconfig-2.3.0-py3-none-any.whl": "f631c04d2c48c52b84d0d0549c99ff3859c98df65b3101406327ecc7d53fbf12",
    "packaging-26.1-py3-none-any.whl": "5d9c0669c6285e491e0ced2eee587eaf67b670d94a19e94e3984a481aba6802f",
    "pygments-2.20.0-py3-none-any.whl": "81a9e26dd42fd28a23a2d169d86d7ac03b46e2f8b59ed4698fb4785f946d0176",
}
# Python modules shipped into the browser's site-packages next to the wheels.
RUNNER_MODULES = (ROOT / "practice" / "judging" / "judge_core.py", ROOT / "practice" / "judging" / "render.py", WEB / "src" / "browser_runner.py")
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm")
# From precompile.mjs: what a worker restoring the snapshot downloads (the zips without the modules the
# snapshot has imported), and the whole site-packages for a start without it (see worker.js).
RUNTIME_FILES = ("snapshot.bin", "stdlib.zip", "site-packages.zip", "site-packages-full.zip")
DIFFICULTY = {"easy": ("简单", "easy"), "medium": ("中等", "medium"), "hard": ("困难", "hard")}
JUDGE_COMMAND = "python practice/judge.py {id}"
ENGINE_COMMAND = "python practice/judge.py engine"
# Served precompressed (NAME.gz beside NAME) when the browser accepts gzip: see Handler and the README.
COMPRESS = (".wasm", ".bin", ".zip", ".mjs", ".js", ".css", ".html", ".json")
# Labels the pages' scripts share with the local judge (practice/render.py).
LABELS = {"status": render.STATUS, "labels": render.LABELS, "advice": render.ADVICE, "messages": render.MESSAGES}
BUILD_MARKER = ".mini-platform-site"   # in an output folder: build.py made it and may replace it


class BuildError(RuntimeError):
    """A build step failed; the message says which and what to do."""


def log(message: str) -> None:
    print(f"[site] {message}", flush=True)


def shown(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        subprocess.run(cmd, cwd=cwd, check=True)
    except FileNotFoundError as exc:
        raise BuildError(f"{what}: {cmd[0]} is not installed ({exc}). Install Node.js 20+ (with npm).") from None
    except subprocess.CalledProcessError as exc:
        raise BuildError(f"{what} failed (exit {exc.returncode}): {' '.join(cmd)} in {cwd}") from None


# ---------------------------------------------------------------- dependencies

def ensure_node_modules() -> None:
    """`npm ci` when a pinned front-end dependency is missing from node_modules or has another version."""
    pinned = json.loads((WEB / "package.json").read_text())["dependencies"]
    for name, version in pinned.items():
        installed = WEB / "node_modules" / name / "package.json"
        if not installed.is_file() or json.loads(installed.read_text())["version"] != version:
            log(f"npm ci (front-end dependencies from site/web/package-lock.json; {name} {version} is missing)")
            run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], WEB, "npm ci")
            return


def ensure_wheels() -> list[Path]:
    """The pinned wheels in site/.cache/wheels, downloaded with pip when absent, hashes checked."""
    folder = CACHE / "wheels"
    missing = [name for name in WHEELS if not (folder / name).is_file()]
    if missing:
        log(f"pip download {len(missing)} wheel(s) for the browser runner")
        specs = ["==".join(name.split("-")[:2]) for name in missing]
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.14", "-d", str(folder), *specs], ROOT, "pip download")
    for name, digest in WHEELS.items():
        if sha256(folder / name) != digest:
            (folder / name).unlink()
            raise BuildError(f"{folder / name} does not have the pinned sha256 {digest}; it was removed, build again.")
    return [folder / name for name in WHEELS]


def build_runtime(out: Path, wheels: list[Path]) -> Path:
    """Copy Pyodide; add the precompiled standard library, site-packages and the warm interpreter
    snapshot (all made by precompile.mjs, cached by the hash of their inputs); return that cache."""
    pyodide = WEB / "node_modules" / "pyodide"
    key = hashlib.sha256()
    for path in (pyodide / "package.json", WEB / "src" / "precompile.mjs", *wheels, *RUNNER_MODULES):
        key.update(path.read_bytes())
    compiled = CACHE / "runtime" / key.hexdigest()[:16]
    if not (compiled / "snapshot.bin").is_file():
        log("byte-compiling the standard library and pytest, and snapshotting them, with Pyodide under Node")
        shutil.rmtree(compiled.parent, ignore_errors=True)   # older inputs' outputs
        compiled.mkdir(parents=True)
        run(["node", str(WEB / "src" / "precompile.mjs"), str(pyodide), str(compiled), *map(str, wheels),
             *map(str, RUNNER_MODULES)], WEB, "precompiling Python files")
    (out / "pyodide").mkdir(parents=True)
    for name in PYODIDE_FILES:
        copy_compressed(pyodide / name, out / "pyodide" / name, compiled)
    copy_compressed(compiled / "python_stdlib.zip", out / "pyodide" / "python_stdlib.zip", compiled)
    # Only the interpreter's identity: no package list, so nothing can be fetched by name.
    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    (out / "pyodide" / "pyodide-lock.json").write_text(json.dumps({"info": lock["info"], "packages": {}}))
    (out / "runtime").mkdir()
    for name in RUNTIME_FILES:
        copy_compressed(compiled / name, out / "runtime" / name, compiled)
    return compiled


def build_rewritten_tests(out: Path, compiled: Path, exercises: list[Exercise]) -> dict[int, str]:
    """runtime/tests/HASH.bin: each browser exercise's test file with pytest's assertion rewriting
    done (rewrite.mjs), which the worker loads instead of rewriting it as the page opens. Cached
    beside the runtime they were made with, by the test file's hash; returns exercise id -> file name."""
    folder = compiled / "tests"
    names, missing = {}, []
    for ex in exercises:
        if ex.pure_python:
            test = ex.file("test.py")
            names[ex.id] = hashlib.sha256(test.read_bytes()).hexdigest()[:16] + ".bin"
            if not (folder / names[ex.id]).is_file():
                missing += [str(test), str(folder / names[ex.id])]
    if missing:
        log(f"rewriting the assertions of {len(missing) // 2} browser test file(s) with Pyodide under Node")
        folder.mkdir(exist_ok=True)
        run(["node", str(WEB / "src" / "rewrite.mjs"), str(WEB / "node_modules" / "pyodide"), str(compiled), *missing],
            WEB, "rewriting test files")
    (out / "runtime" / "tests").mkdir()
    for name in set(names.values()):
        shutil.copy2(folder / name, out / "runtime" / "tests" / name)
    return names


def copy_compressed(source: Path, dest: Path, cache: Path) -> None:
    """Copy ``source`` and its gzipped NAME.gz (see compress), which is made once into ``cache``."""
    packed = cache / "gz" / (source.name + ".gz")
    if not packed.is_file():
        packed.parent.mkdir(exist_ok=True)
        gzip_file(source, packed)
    shutil.copy2(source, dest)
    if packed.stat().st_size:   # empty: not worth compressing
        shutil.copy2(packed, dest.with_name(dest.name + ".gz"))


def build_assets(out: Path, runtime_version: str) -> None:
    """Bundle the page scripts with esbuild; copy the stylesheet and the worker, which names its cache of
    the runtime files by ``runtime_version`` (a new runtime, a new cache: see worker.js)."""
    assets = out / "assets"
    run([str(WEB / "node_modules" / ".bin" / "esbuild"), "src/index.js", "src/local.js", "src/runner.js", "src/exercise.js", "--bundle",
         "--format=esm", "--minify", "--log-level=warning", f"--outdir={assets}"], WEB, "esbuild")
    worker = (WEB / "src" / "worker.js").read_text(encoding="utf-8")
    if worker.count("__RUNTIME_VERSION__") != 1:
        raise BuildError("site/web/src/worker.js must name its cache with __RUNTIME_VERSION__ exactly once")
    (assets / "worker.js").write_text(worker.replace("__RUNTIME_VERSION__", runtime_version), encoding="utf-8")
    shutil.copy2(WEB / "static" / "style.css", assets / "style.css")   # token colours for both schemes included


# ---------------------------------------------------------------- notebooks

def notebook_key(path: Path) -> str:
    """Hash of the notebook and of the code its outputs come from: the engine, and the judge that the
    closing "用你的实现跑引擎" cells run."""
    digest = hashlib.sha256(path.read_bytes())
    judge = [*(ROOT / "practice").glob("*.py"), *(ROOT / "practice" / "judging").glob("*.py")]
    for source in sorted([*(ROOT / "mini_platform").rglob("*.py"), *judge]):
        digest.update(source.relative_to(ROOT).as_posix().encode() + source.read_bytes())
    return digest.hexdigest()[:20]


def execute_notebook(path: Path, execute: bool):
    """The executed notebook: from the cache when its key matches, else run with nbclient."""
    import nbformat

    folder = CACHE / "notebooks"
    cached = folder / f"{path.stem}-{notebook_key(path)}.ipynb"
    if cached.is_file():
        return nbformat.read(cached, as_version=4)
    if not execute:
        older = sorted(folder.glob(f"{path.stem}-*.ipynb"), key=lambda p: p.stat().st_mtime)
        if older:
            log(f"{path.name}: changed since its cached execution; using the older outputs (--no-execute)")
            return nbformat.read(older[-1], as_version=4)
        log(f"{path.name}: never executed; rendering it without outputs (--no-execute)")
        return nbformat.read(path, as_version=4)
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    code_cells = sum(cell.cell_type == "code" for cell in nb.cells)
    state = {"index": 0, "count": 0}

    live = sys.stdout.isatty()

    def on_start(cell, cell_index):
        state["index"] = cell_index
        if cell.cell_type == "code":
            state["count"] += 1
            if live:
                print(f"\r[site] executing {path.name}: code cell {state['count']}/{code_cells}", end="", flush=True)

    if not live:
        log(f"executing {path.name} ({code_cells} code cells)")
    started = time.perf_counter()
    client = NotebookClient(nb, timeout=600, kernel_name="python3", on_cell_start=on_start,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        with tempfile.TemporaryDirectory(prefix="mini-site-workspace-") as workspace:
            client.execute(env=execution_env(Path(workspace)))
    except CellExecutionError as exc:
        print(end="\n" if live else "", flush=True)
        cell = nb.cells[state["index"]]
        first = (cell.source.strip().splitlines() or [""])[0]
        raise BuildError(f"{shown(path)}: cell {state['index'] + 1} (code cell {state['count']}, "
                         f"starting {first!r}) raised {exc.ename}: {exc.evalue}\n"
                         f"Fix the notebook or the code it calls, then build again.") from None
    print(end="\n" if live else "")
    log(f"{path.name} executed in {time.perf_counter() - started:.1f} s")
    store_executed(path, nb)
    return nb


def execution_env(workspace: Path) -> dict[str, str]:
    """The environment a chapter is executed in: this one, with the judge's workspace and state in
    ``workspace``, an empty folder of the build's own. A published chapter shows what a new reader sees
    (the reference parts), never the builder's files, verdicts or paths from practice/workspace/."""
    return {**os.environ, WORKSPACE_ENV: str(workspace)}


def store_executed(path: Path, nb) -> None:
    """Keep ``nb``, the notebook at ``path`` executed top to bottom in ``execution_env``, as its cached
    execution (the notebook tests store theirs too, so a build in the same test session executes
    nothing again)."""
    import nbformat

    folder = CACHE / "notebooks"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(f"{path.stem}-*.ipynb"):
        stale.unlink()
    nbformat.write(nb, folder / f"{path.stem}-{notebook_key(path)}.ipynb")


def chapter_title(nb, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.MULTILINE)
            if match:
                return match.group(1).strip()
    return fallback


# CommonMark does not close ``**`` after punctuation when a letter follows (``**注意：**这里``), which
# Chinese writes all the time; such bold is written as <strong> before the markdown is rendered.
_CJK_PUNCTUATION = "，。、；：？！（）「」『』“”‘’《》【】—…·"
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]+`)", re.DOTALL)
_SUMMARY_LINE = re.compile(r"(</summary>)[ \t]*\n(?![ \t]*\n)")
_DETAILS_END = re.compile(r"(?<=\S)[ \t]*\n([ \t]*</details>)")


def fix_markdown(text: str) -> str:
    """Markdown as the notebooks mean it: bold next to Chinese punctuation renders, and markdown
    inside ``<details>`` renders (a blank line after the summary and before the end)."""
    def bold(match: re.Match) -> str:
        inner = match.group(1)
        return f"<strong>{inner}</strong>" if inner[-1] in _CJK_PUNCTUATION or inner[0] in _CJK_PUNCTUATION else match.group(0)

    pieces = _CODE.split(text)
    for i in range(0, len(pieces), 2):   # odd pieces are code: left alone
        pieces[i] = _BOLD.sub(bold, pieces[i])
    text = "".join(pieces)
    text = _SUMMARY_LINE.sub(r"\1\n\n", text)
    return _DETAILS_END.sub(r"\n\n\1", text)


_FIGURE_TITLE = re.compile(r"""(?:set_title|suptitle|\btitle)\(\s*f?(["'])(.+?)\1""")


def is_source(text: str) -> bool:
    """Whether a printed output is Python source (``print(inspect.getsource(...))``): shown highlighted."""
    import textwrap

    if not text.lstrip().startswith(("def ", "class ", "@", "async def ")):
        return False
    try:
        ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return False
    return True


def render_notebook(nb) -> str:
    import copy

    import nbformat

    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = fix_markdown(cell.source)
        titles = _FIGURE_TITLE.findall(cell.source) if cell.cell_type == "code" else []
        for i, output in enumerate(cell.get("outputs", [])):
            for kind in ("image/png", "image/jpeg", "image/svg+xml"):
                if kind in output.get("data", {}):
                    alt = "Figure: " + "; ".join(t for _, t in titles) if titles else "Figure drawn by the code above"
                    output.setdefault("metadata", {}).setdefault(kind, {}).setdefault("alt", alt)
            if output.get("output_type") == "stream" and output.get("name") == "stdout" and is_source(output["text"]):
                cell.outputs[i] = nbformat.v4.new_output("display_data", data={"text/html": highlight(output["text"])})
    exporter = HTMLExporter(template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    return body


# ---------------------------------------------------------------- pages

def markdown(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(fix_markdown(text))


def templates(repository: str | None = None):
    """The page templates; ``repository`` is the course's ``git clone`` address the local-judge pages
    show (None: they say how to start from a downloaded archive instead)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(WEB / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(difficulty=DIFFICULTY, judge_command=JUDGE_COMMAND, labels=script_json(LABELS),
                       repository=check_repository(repository))
    env.filters["dotted"] = dotted
    return env


_REPOSITORY = re.compile(r"(?:https?|ssh|git)://[^\s/]+/\S+|[\w.-]+@[\w.-]+:\S+")


def check_repository(address: str | None) -> str | None:
    """``address`` when it is one ``git clone`` takes (https://, ssh://, git:// or user@host:path)."""
    if address is None or _REPOSITORY.fullmatch(address):
        return address
    raise BuildError(f"--repository {address!r} is not an address git clone takes; give the course's own, "
                     "e.g. https://github.com/OWNER/mini-platform.git or git@github.com:OWNER/mini-platform.git, "
                     "or leave it out (the pages then say how to start from a downloaded archive).")


def dotted(name: str):
    """A dotted path as HTML that a narrow column may break after a dot, and nowhere else."""
    from markupsafe import Markup

    return Markup(".<wbr>").join(name.split("."))


def script_json(data) -> str:
    """JSON safe to put inside <script type="application/json">."""
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def english_summaries(stems: list[str]) -> dict[str, dict]:
    """Each chapter's English title and summary (site/web/chapters_en.toml), shown at its top in English
    mode since the prose is Chinese; a BuildError names the chapters that have none."""
    import tomllib

    try:
        table = tomllib.loads(CHAPTERS_EN.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise BuildError(f"{shown(CHAPTERS_EN)} is not valid TOML: {exc}") from None
    missing = [stem for stem in stems if not {"title", "summary"} <= set(table.get(stem, {}))]
    if missing:
        raise BuildError(f"{shown(CHAPTERS_EN)} has no English title and summary for {', '.join(missing)}: add a "
                         f'["{missing[0]}"] table with title = "..." and summary = """...""" (what the chapter covers).')
    return {stem: {"title": table[stem]["title"], "summary": " ".join(table[stem]["summary"].split())} for stem in stems}


def build_chapters(out: Path, env, execute: bool, exercises: list[Exercise]) -> list[dict]:
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    english = english_summaries([path.stem for path in paths])
    chapters = []
    for path in paths:
        nb = execute_notebook(path, execute)
        chapters.append({"number": int(path.name[:2]), "stem": path.stem, "title": chapter_title(nb, path.stem),
                         "title_en": english[path.stem]["title"], "summary_en": english[path.stem]["summary"],
                         "href": f"chapters/{path.stem}.html", "body": render_notebook(nb)})
    for i, chapter in enumerate(chapters):
        write(out / chapter["href"], env.get_template("chapter.html.j2").render(
            root="../", chapter=chapter, prev=chapters[i - 1] if i else None,
            next=chapters[i + 1] if i + 1 < len(chapters) else None,
            exercises=[e for e in exercises if e.chapter == chapter["number"]]))
    log(f"{len(chapters)} chapter page(s)")
    return chapters


def highlight(code: str) -> str:
    from pygments import highlight as pygmentize
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return pygmentize(code, PythonLexer(), HtmlFormatter(cssclass="highlight"))


def runtime_sizes(out: Path) -> dict:
    return {name: (out / "runtime" / name).stat().st_size for name in ("site-packages.zip", "snapshot.bin", "stdlib.zip")}


def build_exercises(out: Path, env, exercises: list[Exercise], chapters: list[dict], rewritten: dict[int, str]) -> None:
    by_number = {c["number"]: c for c in chapters}
    sizes = runtime_sizes(out)
    for i, ex in enumerate(exercises):
        if ex.pure_python:
            check_browser_imports(ex)
        zh, en, shared = split_statement(ex.body)
        following = exercises[i + 1] if i + 1 < len(exercises) else None
        data = {"id": ex.id, "timeout": ex.timeout, "starter": ex.file("starter.py").read_text(encoding="utf-8"),
                "next": {"id": following.id, "title": following.title, "title_en": following.title_en} if following else None}
        if ex.pure_python:
            data["test"] = ex.file("test.py").read_text(encoding="utf-8")
            data["runtime"] = sizes
            data["rewritten"] = rewritten[ex.id]
        chapter = by_number.get(ex.chapter)
        section = ""
        if chapter and 'id="练习"' in chapter["body"]:
            section = "#练习"
        hints = [{"zh": markdown(h["zh"]), "en": markdown(h["en"])} for h in ex.hints()]
        write(out / "exercises" / f"{ex.id}.html", env.get_template("exercise.html.j2").render(
            root="../", ex=ex, zh=markdown(zh), en=markdown(en), shared=markdown(shared) if shared else "",
            data=script_json(data), starter=highlight(data["starter"]), chapter=chapter, section=section,
            tests=highlight(ex.file("test.py").read_text(encoding="utf-8")),
            solution=highlight(ex.file("solution.py").read_text(encoding="utf-8")), hints=hints,
            prev=exercises[i - 1] if i else None, next=following))
    log(f"{len(exercises)} exercise page(s), {sum(e.pure_python for e in exercises)} runnable in the browser")


def build_engine_page(out: Path, env, exercises: list[Exercise]) -> None:
    """engine.html: a row per exercise whose solution stands in for engine parts (``engine:`` in its
    front matter); whose each part is comes from the visitor's progress (site.js)."""
    parts = [e for e in exercises if e.engine]
    write(out / "engine.html", env.get_template("engine.html.j2").render(root="", parts=parts,
                                                                          engine_command=ENGINE_COMMAND))
    log(f"engine page: {len(parts)} exercise(s) with engine parts")


BROWSER_MODULES = set(sys.stdlib_module_names) | {"pytest", "submission"}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (never run: imports for annotations only)."""
    def is_flag(test: ast.expr) -> bool:
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
            (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    return {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and is_flag(node.test)
            for statement in node.body for inner in ast.walk(statement)}


def check_browser_imports(exercise: Exercise) -> None:
    """A browser-runnable exercise may import only what the worker has: the standard library and pytest
    (an import under ``if TYPE_CHECKING:`` never runs)."""
    for name in ("test.py", "solution.py", "starter.py"):
        tree = ast.parse(exercise.file(name).read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                if module.split(".")[0] not in BROWSER_MODULES:
                    raise BuildError(f"{exercise.name}/{name}:{node.lineno} imports {module}, which the browser runner "
                                     f"does not have (standard library and pytest only). Add it to `requires` in "
                                     f"problem.md, or drop the import.")


def check_self_contained(out: Path) -> None:
    """Fail when a built page, script or stylesheet would load anything from another host."""
    pattern = re.compile(r"""(?:\bsrc\s*=\s*["']?|<link[^>]*href\s*=\s*["']?|url\(\s*["']?|\bimport\s*\(?\s*["']|"""
                         r"""@import\s+["']|\bfetch\(\s*["'`]|sourceMappingURL=)(?:https?:)?//""", re.IGNORECASE)
    for path in out.rglob("*"):
        if path.suffix in (".html", ".js", ".mjs", ".css") and path.is_file():
            match = pattern.search(path.read_text(encoding="utf-8", errors="replace"))
            if match:
                raise BuildError(f"{path.relative_to(out)} would load from another host: {match.group(0)!r}")


def build(out: Path, execute: bool = True, only_exercises: bool = False, repository: str | None = None) -> None:
    started = time.perf_counter()
    earlier = (out / BUILD_MARKER).is_file() or (out / "runtime" / "snapshot.bin").is_file()   # or an older build
    if out.exists() and any(out.iterdir()) and not earlier:
        raise BuildError(f"{out} is not empty and was not made by this script, which replaces the whole "
                         "output folder; choose an empty or new folder for --out.")
    env = templates(repository)   # a bad --repository fails here, before anything is deleted
    ensure_node_modules()
    wheels = ensure_wheels()
    exercises = discover()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / BUILD_MARKER).write_text("made by site/build.py; the whole folder is replaced on each build\n")
    compiled = build_runtime(out, wheels)
    rewritten = build_rewritten_tests(out, compiled, exercises)
    build_assets(out, compiled.name)
    chapters = [] if only_exercises else build_chapters(out, env, execute, exercises)
    build_exercises(out, env, exercises, chapters, rewritten)
    write(out / "index.html", env.get_template("index.html.j2").render(root="", chapters=chapters,
                                                                        exercises=exercises))
    build_engine_page(out, env, exercises)
    check_self_contained(out)
    compress(out)
    log(f"built {out} in {time.perf_counter() - started:.1f} s")


def compress(out: Path) -> None:
    """Write NAME.gz beside every file worth compressing (the server picks it when the browser
    accepts gzip); the uncompressed file stays for hosts that serve files as they are."""
    before = after = 0
    for path in sorted(out.rglob("*")):
        packed = path.with_name(path.name + ".gz")
        if path.is_file() and path.suffix in COMPRESS and not packed.exists():   # the runtime's came compressed
            gzip_file(path, packed)
            if packed.stat().st_size:
                before, after = before + path.stat().st_size, after + packed.stat().st_size
            else:
                packed.unlink()
    log(f"precompressed {before / 1e6:.1f} MB into {after / 1e6:.1f} MB of .gz files")


def gzip_file(source: Path, dest: Path) -> None:
    """Write ``source`` gzipped to ``dest``, or an empty ``dest`` when that saves under 10 %."""
    import gzip

    data = source.read_bytes()
    packed = gzip.compress(data, compresslevel=9, mtime=0)
    dest.write_bytes(packed if len(packed) < len(data) * 0.9 else b"")


# ---------------------------------------------------------------- serving

class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files plus the headers that make the page cross-origin isolated (SharedArrayBuffer,
    so a running exercise can be interrupted without killing its worker)."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm"}

    def send_head(self):
        """The file, or its precompressed NAME.gz with Content-Encoding: gzip when the browser accepts it;
        either with Last-Modified, and 304 Not Modified when the browser's copy is as new (so that a
        returning visit revalidates its cached copies instead of downloading them again)."""
        path = Path(self.translate_path(self.path))
        packed = path.with_name(path.name + ".gz")
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not accepts or path.is_dir() or not packed.is_file() or not path.is_file():
            return super().send_head()   # the standard handler: Last-Modified and If-Modified-Since included
        try:
            handle = open(packed, "rb")
        except OSError:
            return super().send_head()
        modified = int(path.stat().st_mtime)
        if self.unchanged_since(modified):
            handle.close()
            self.send_response(304)
            self.end_headers()
            return None
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(packed.stat().st_size))
        self.send_header("Last-Modified", self.date_time_string(modified))
        self.end_headers()
        return handle

    def unchanged_since(self, modified: int) -> bool:
        """Whether the request's If-Modified-Since is at or after ``modified`` (seconds since the epoch)."""
        from email.utils import parsedate_to_datetime

        try:
            since = parsedate_to_datetime(self.headers.get("If-Modified-Since", ""))
        except (TypeError, ValueError, IndexError, OverflowError):
            return False
        return since is not None and since.timestamp() >= modified

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
        pass


def make_server(directory: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server for ``directory`` on 127.0.0.1 (port 0: any free port); call serve_forever()."""
    handler = lambda *a, **kw: Handler(*a, directory=str(directory), **kw)  # noqa: E731
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=SITE / "_build", help="output folder (default: site/_build)")
    parser.add_argument("--no-execute", action="store_true", help="reuse cached notebook outputs, run nothing")
    parser.add_argument("--only-exercises", action="store_true", help="build the index and exercise pages only")
    parser.add_argument("--repository", metavar="URL",
                        help="the course's git address, shown as `git clone URL` on the pages of exercises judged "
                             "locally (default: they say how to start from a downloaded archive)")
    parser.add_argument("--serve", action="store_true", help="serve the built site on 127.0.0.1 afterwards")
    parser.add_argument("--port", type=int, default=8000, help="port for --serve (default 8000)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    try:
        build(out, execute=not args.no_execute, only_exercises=args.only_exercises, repository=args.repository)
    except (BuildError, ExerciseError) as exc:
        print(f"[site] build failed: {exc}", file=sys.stderr)
        return 1
    if args.serve:
        try:
            server = make_server(out, args.port)
        except OSError as exc:
            print(f"[site] cannot serve on 127.0.0.1:{args.port}: {exc.strerror}; pick another with --port N "
                  f"(the site is built in {out})", file=sys.stderr)
            return 1
        log(f"serving {out} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl+C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
