"""Glue between the site's Web Worker and the judge's test-running core and renderer.

The worker calls :func:`run` once per click on Run. The verdict comes from ``judge_core.run_tests``,
the same function the local judge's child process calls; it gives every run a fresh directory and
forgets the modules the previous run imported, so one long-lived interpreter serves many runs. The
page shows ``render.view`` of it, the presentation the local judge prints.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import judge_core
import render

INPUTS = Path("/tmp/inputs")
RUNS = Path("/tmp/runs")
sys.dont_write_bytecode = True


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
