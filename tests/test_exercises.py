"""The exercise format (practice/exercises.py) and every exercise under practice/.

For each exercise folder: it loads and validates, its solution is accepted and its starter is not,
judged through the judge's real isolated path; it has a test_example* test.
"""
from __future__ import annotations

import pytest

from test_judge import PROBLEM, make_exercise

from judging import exercises  # noqa: E402  (practice/ is on sys.path via test_judge)
import judge  # noqa: E402
from judging.exercises import ExerciseError  # noqa: E402

FOLDERS = exercises.exercise_dirs()


# ---------------------------------------------------------------------------------------------
# Front matter and validation


def test_front_matter_subset():
    text = ('---\nid: 180\ntitle: 平台插件：发现\ntitle_en: "A: quoted # not a comment"  # comment\n'
            "requires: [torch, 'triton']\nempty: []\ntimeout: 10\n\n# a comment line\n---\n\nBody\n")
    fields, body = exercises.parse_front_matter(text)
    assert fields == {"id": 180, "title": "平台插件：发现", "title_en": "A: quoted # not a comment",
                      "requires": ["torch", "triton"], "empty": [], "timeout": 10}
    assert body == "Body\n"


@pytest.mark.parametrize("text, needle", [
    ("id: 180\n---\n", "'---'"),
    ("---\nid: 180\n", "closing"),
    ("---\nid 180\n---\n", "key: value"),
    ("---\nid: 180\nid: 181\n---\n", "duplicate"),
    ("---\nrequires: [torch\n---\n", "cannot parse"),
])
def test_front_matter_errors_name_the_problem(text, needle):
    with pytest.raises(ExerciseError) as info:
        exercises.parse_front_matter(text, "x/problem.md")
    assert needle in info.value.en and info.value.zh and "x/problem.md" in str(info.value)


@pytest.mark.parametrize("edit, needle", [
    (("difficulty: easy", "difficulty: trivial"), "difficulty"),
    (("timeout: 3", "timeout: soon"), "timeout"),
    (("chapter: 1", "chapter: 2"), "chapter"),
    (("requires: []", "requires: [cuda_magic]"), "cuda_magic"),
    (("id: 189", "id: 188"), "folder number"),
    (("title_en: \"Double it\"   # a comment\n", ""), "title_en"),
])
def test_invalid_exercises_are_rejected(tmp_path, edit, needle):
    folder = make_exercise(tmp_path, problem=PROBLEM.format(id=189, timeout=3).replace(*edit))
    with pytest.raises(ExerciseError, match=needle):
        exercises.load_exercise(folder)


def test_load_find_discover_and_statement(tmp_path):
    make_exercise(tmp_path)
    (tmp_path / "workspace").mkdir()      # not an exercise folder
    exercise = exercises.find("189", tmp_path)
    assert (exercise.id, exercise.slug, exercise.name, exercise.chapter) == (189, "double", "189_double", 1)
    assert exercise.pure_python and exercise.requires == () and exercise.timeout == 3
    assert exercise.statement("zh").startswith("实现") and "Implement" not in exercise.statement("zh")
    assert exercise.statement("en").startswith("Implement") and "实现" not in exercise.statement("en")
    assert all("double(2)   # 4" in exercise.statement(lang) for lang in ("zh", "en"))
    assert exercise.example_tests() == ["test_example"] and exercises.validate_layout(exercise) == []
    assert exercise.metadata() == {"id": 189, "slug": "double", "name": "189_double", "title": "加倍",
                                   "title_en": "Double it", "chapter": 1, "difficulty": "easy", "requires": [],
                                   "timeout": 3, "pure_python": True, "engine": []}
    assert [e.id for e in exercises.discover(tmp_path)] == [189]
    with pytest.raises(ExerciseError, match="no exercise 181"):
        exercises.find(181, tmp_path)
    make_exercise(tmp_path, 189, "again")
    with pytest.raises(ExerciseError, match="duplicate"):
        exercises.discover(tmp_path)
    with pytest.raises(ExerciseError, match="missing"):
        exercises.load_exercise((tmp_path / "189_again" / "starter.py").unlink() or tmp_path / "189_again")


# ---------------------------------------------------------------------------------------------
# Every exercise in the repository


@pytest.fixture(scope="module")
def checked():
    """judge.check_exercise for every exercise, two at a time: each exercise's solution, starter and
    wrong solutions are judged in one child process (sandbox.run_batch), so torch is imported once."""
    from concurrent.futures import ThreadPoolExecutor

    loaded = []
    for folder in FOLDERS:
        try:
            loaded.append(exercises.load_exercise(folder))
        except ExerciseError:
            pass   # reported by test_exercise_passes_the_maintainer_check
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((e.name for e in loaded), pool.map(judge.check_exercise, loaded)))


@pytest.mark.slow   # about three minutes on 2 cores: the slow tier (python -m pytest -m slow)
@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_exercise_passes_the_maintainer_check(folder, checked):
    """Well formed, has test_example*, solution accepted, starter imports and fails, every wrong/*.py
    is rejected, hints.md present and well formed, at least five wrong solutions (judge.py check)."""
    exercise = exercises.load_exercise(folder)
    assert exercise.example_tests(), "test.py needs test_example* tests (the statement's examples)"
    report = checked[exercise.name]
    assert report["problems"] == []
    # In this repository the habit is a rule: hints.md and at least five wrong solutions for every exercise
    # (judge.py check only warns, so that an exercise can be checked while it is being written).
    assert report["warnings"] == []
    assert all(w["status"] != "accepted" for w in report["wrong"])
    if report["skipped"]:
        pytest.skip(report["skipped"])


def test_test_functions_are_read_without_importing(tmp_path):
    test = ("import pytest\nraise SystemExit('never imported')\n\n@pytest.fixture\ndef test_data():\n    return 1\n\n"
            "def helper():\n    pass\n\ndef test_example_one(test_data):\n    pass\n\n"
            "@pytest.mark.parametrize('x', [1, 2])\ndef test_many(x):\n    pass\n\nclass TestGroup:\n"
            "    def test_inside(self):\n        pass\n")
    exercise = exercises.load_exercise(make_exercise(tmp_path, test=test))
    assert exercise.test_functions() == ["test_example_one", "test_many"]   # fixtures, helpers, methods: no
    assert exercise.example_tests() == ["test_example_one"]


def test_layout_problems_are_reported(tmp_path):
    body = PROBLEM.format(id=189, timeout=3).replace("## English", "## Englisch").replace("## 示例 / Example", "## Usage")
    exercise = exercises.load_exercise(make_exercise(tmp_path, problem=body, test="def test_first():\n    pass\n"))
    problems = exercises.validate_layout(exercise)
    assert len(problems) == 3 and all(" / " in p for p in problems)   # English, example, test_example


def test_there_are_exercises():
    assert FOLDERS, "practice/ holds no exercise folders"
