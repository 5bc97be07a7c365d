"""What the judge keeps by content: a test file's rewritten assertions (judge_core), its test names
(exercises.Exercise.test_functions) and the engine judge's runs (engine_cache). The engine judge's own second run is tested in tests/test_engine_judge.py."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "practice") not in sys.path:
    sys.path.insert(0, str(ROOT / "practice"))

from judging import engine_cache, exercises, judge_core  # noqa: E402

TEST = '''\
from submission import double


def test_small():
    assert double(2) == 4


def test_large():
    value = double(21)
    assert value == 42, f"double(21) gave {value}"
'''


def judged(tmp_path: Path, test: str, answer: str, cache: Path) -> dict:
    (tmp_path / "test.py").write_text(test)
    (tmp_path / "answer.py").write_text(answer)
    return judge_core.run_tests(tmp_path / "test.py", tmp_path / "answer.py", tmp_path / "work", str(cache))


def test_rewritten_assertions_are_kept_by_the_test_files_content(tmp_path, monkeypatch):
    cache = tmp_path / "rewritten"
    judge_core._REWRITTEN.clear()
    assert judged(tmp_path, TEST, "def double(x):\n    return 2 * x\n", cache)["status"] == "accepted"
    stored = sorted(cache.iterdir())
    assert len(stored) == 1
    judge_core._REWRITTEN.clear()   # a new process: read back from the folder, not rewritten again
    monkeypatch.setattr(judge_core, "_rewrite_test", lambda *args: (_ for _ in ()).throw(AssertionError("rewritten")))
    wrong = judged(tmp_path, TEST, "def double(x):\n    return 2 * x + (x > 10)\n", cache)
    assert sorted(cache.iterdir()) == stored
    failed = next(t for t in wrong["tests"] if t["outcome"] == "failed")
    # still pytest's rewritten assertion (the values shown), and the frame names this run's test.py
    assert "double(21) gave 43" in failed["message"] and "assert 43 == 42" in failed["message"], failed
    assert failed["details"].startswith("test.py:10 in test_large"), failed["details"]
    monkeypatch.undo()
    changed = judged(tmp_path, TEST.replace("== 4\n", "== 4, 'two'\n"), "def double(x):\n    return 2 * x\n", cache)
    assert changed["status"] == "accepted" and len(list(cache.iterdir())) == 2   # another content, another entry


def test_the_rewritten_test_is_stored_before_the_submission_runs(tmp_path):
    cache = tmp_path / "rewritten"
    judge_core._REWRITTEN.clear()
    verdict = judged(tmp_path, TEST, "raise SystemExit('at import')\n", cache)
    assert verdict["status"] != "accepted" and len(list(cache.iterdir())) == 1


def test_test_names_are_kept_by_the_test_files_content(tmp_path):
    folder = tmp_path / "180_example"
    folder.mkdir()
    (folder / "test.py").write_text(TEST)
    exercise = exercises.Exercise(180, "example", folder, "例", "example", 1, "easy", (), 10, "")
    cache = tmp_path / "names"
    assert exercise.test_functions(cache) == ["test_small", "test_large"] == exercise.test_functions()
    stored = next(cache.iterdir())
    stored.write_text('["test_small"]')   # read back as it is: proves the cache is used
    assert exercise.test_functions(cache) == ["test_small"]
    stored.write_text("not json")         # unreadable: parsed again, and stored anew
    assert exercise.test_functions(cache) == ["test_small", "test_large"]
    (folder / "test.py").write_text(TEST + "\n\ndef test_third():\n    pass\n")   # another content, another entry
    assert exercise.test_functions(cache)[-1] == "test_third" and len(list(cache.iterdir())) == 2


def test_a_run_entry_is_read_back_with_this_workspaces_paths(tmp_path):
    cache = engine_cache.Cache(tmp_path)
    result = {"steps": [], "error": {"where": "/old/workspace/194_rms_norm.py:3 in rms_norm"}, "calls": {}}
    cache.store_run("k", result, {"194": "/old/workspace/194_rms_norm.py"})
    assert "/old/" not in (tmp_path / "run" / "k.json").read_text()
    back = cache.run("k", {"194": "/new/place/194_rms_norm.py"})
    assert back["error"]["where"] == "/new/place/194_rms_norm.py:3 in rms_norm"
    assert cache.run("other", {}) is None and (cache.hits, cache.misses) == (1, 1)
    assert engine_cache.Cache(None).run("k", {}) is None   # --no-cache reads nothing
