"""Glue between the site's Web Worker and the judge's test-running core and renderer.

The worker calls :func:`run` once per click on Run. The verdict comes from ``judge_core.run_tests``,
the same function the local judge's child process calls; it gives every run a fresh directory and
forgets the modules the previous run imported, so one long-lived interpreter serves many runs. The
page shows ``render.view`` of it, the presentation the local judge prints.

Two things are kept between runs. First, pytest's assertion rewriting of a test file, which costs more than
running most exercises' tests: judge_core keeps it per the file's bytes (``judge_core.rewritten``), with
the file name of the new run directory put back into every code object (tracebacks point at the new file).
:func:`prepare` gives the page's test file's rewritten code to the worker as soon as it is ready,
before the first Run: built by :func:`compile_test` at site build time (site/web/src/rewrite.mjs),
or rewritten then.
Second, the argument names pluggy and pytest read from the signatures of their own hook and fixture
functions as every run registers its plugins (about a tenth of a warm run): the same functions are
registered each run, so the names are remembered per function. Only functions defined in
site-packages (pytest, pluggy, the judge) are remembered, never one of a run's own files, so nothing
of a run is kept alive by this.
"""
from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
import types
from pathlib import Path

import judge_core
import render
import pluggy._hooks
from _pytest import fixtures

INPUTS = Path("/tmp/inputs")
RUNS = Path("/tmp/runs")
SITE_PACKAGES = os.path.dirname(os.path.dirname(pluggy._hooks.__file__)) + os.sep
sys.dont_write_bytecode = True


def _remembered(compute):
    """``compute(func, ...)`` remembered per function and arguments, for functions that outlive every
    run: plain functions or bound methods whose code lies in site-packages."""
    cache: dict = {}

    def remembered(func, *args, **kwargs):
        function = getattr(func, "__func__", func)
        code = getattr(function, "__code__", None)
        if not isinstance(function, types.FunctionType) or code is None or not code.co_filename.startswith(SITE_PACKAGES):
            return compute(func, *args, **kwargs)
        key = (function, function is not func, args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = compute(func, *args, **kwargs)
        return cache[key]

    return remembered


pluggy._hooks.varnames = _remembered(pluggy._hooks.varnames)
fixtures.getfuncargnames = _remembered(fixtures.getfuncargnames)


def prepare(test_source: str, compiled=None) -> None:
    """Have ``test_source``'s rewritten assertions ready for the first Run (kept by judge_core per the file's
    bytes): from ``compiled`` (what :func:`compile_test` made of the same source at build time) when given
    and made from these bytes, else by rewriting them now, while the visitor reads (slow in a just-started
    interpreter). ``compiled``: bytes, or the worker's Uint8Array (a JsProxy), or None."""
    source = test_source.encode("utf-8")
    if compiled is not None and not isinstance(compiled, bytes):
        compiled = compiled.to_bytes()
    if compiled is not None and compiled[:32] == hashlib.sha256(source).digest():
        try:
            judge_core.remember(source, marshal.loads(compiled[32:]))
            return
        except (ValueError, EOFError, TypeError):   # not what compile_test wrote: rewrite below
            pass
    try:
        _rewrite(test_source)
    except Exception:  # noqa: BLE001 - e.g. a SyntaxError: the run reports it
        pass


def compile_test(test_source: str) -> bytes:
    """``test_source`` with pytest's assertion rewriting applied, for :func:`prepare`: the sha256 of
    the source, then the module's code object, marshalled (this interpreter's version of Python)."""
    return hashlib.sha256(test_source.encode("utf-8")).digest() + marshal.dumps(_rewrite(test_source))


def _rewrite(test_source: str) -> types.CodeType:
    """judge_core's rewriting of ``test_source``, remembered for the runs."""
    folder = INPUTS / "prepared"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.py").write_text(test_source, encoding="utf-8")
    return judge_core.rewritten(folder / "test.py")


def warm_up() -> None:
    """Run one trivial judgement now, while the visitor is still reading, so that pytest's lazy
    imports and plugin set-up are not paid for by the first real run."""
    run("def test_ready():\n    assert [1] == [1]\n", "")


def run(test_source: str, submission_source: str) -> str:
    """Judge ``submission_source`` with ``test_source``; return {"verdict", "view"} as JSON."""
    INPUTS.mkdir(parents=True, exist_ok=True)
    (INPUTS / "test.py").write_text(test_source, encoding="utf-8")
    (INPUTS / "submission.py").write_text(submission_source, encoding="utf-8")
    verdict = judge_core.run_tests(INPUTS / "test.py", INPUTS / "submission.py", RUNS)
    return json.dumps({"verdict": verdict, "view": render.view(verdict)}, ensure_ascii=False)
