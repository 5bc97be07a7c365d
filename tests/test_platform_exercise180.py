"""Exercise 180 and the engine cannot disagree: 180's resolution tests run against mini_platform.

A shim module named ``submission`` re-exports the engine's ``resolve_platform``,
``PlatformResolutionError`` and ``UNSPECIFIED``; a conftest next to it keeps only the tests that
exercise resolution (the forwarding tests target the exercise's own small ``Platform``, not the
engine's, whose forwarding goes to torch and is tested in tests/test_platforms.py).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = next(iter(sorted((ROOT / "practice").glob("180_*"))), None)

SHIM = """\
from mini_platform.platforms.resolution import UNSPECIFIED, PlatformResolutionError, resolve_platform
"""

# Keep a test when its body (or a helper it calls by these names) runs the resolution rules.
SELECT_RESOLUTION_TESTS = """\
import inspect
import re

RESOLUTION = re.compile(r"\\b(resolve|resolve_platform|resolution_error|PlatformResolutionError|UNSPECIFIED)\\b")


def pytest_collection_modifyitems(config, items):
    keep = [item for item in items if RESOLUTION.search(inspect.getsource(item.function))]
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep
"""


@pytest.mark.skipif(EXERCISE is None, reason="practice/180_* is absent, so there is no exercise to compare with")
def test_exercise_180_resolution_tests_pass_against_the_engine(tmp_path):
    shutil.copy(EXERCISE / "test.py", tmp_path / "test_exercise.py")
    (tmp_path / "submission.py").write_text(SHIM)
    (tmp_path / "conftest.py").write_text(SELECT_RESOLUTION_TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINI_PLATFORM")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_exercise.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    deselected = re.search(r"(\d+) deselected", proc.stdout)
    # The selection must keep the resolution tests (the example and the randomized oracle among
    # them) and leave out the forwarding ones; a selection that kept nothing would prove nothing.
    assert passed and int(passed.group(1)) >= 10, proc.stdout[-2000:]
    assert deselected and int(deselected.group(1)) >= 1, proc.stdout[-2000:]
