"""``python practice/judge.py engine``: the engine assembled from the learner's parts, against transformers.

Two real runs (each a child that builds the tiny Llama and Mixtral and asks transformers): every
solution in a temporary workspace, then a workspace with one subtly wrong file that still passes its
exercise's tests, a starter and a missing file. The rest checks the pieces in-process.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRACTICE = REPO / "practice"
sys.path.insert(0, str(PRACTICE))
from judging import engine_parts  # noqa: E402
from judging import engine_run  # noqa: E402
from judging import exercises  # noqa: E402

ENGINE_EXERCISES = engine_parts.engine_exercises(PRACTICE)
# Exact except on a 2-D input whose last dimension is 64 (the tiny models' hidden size): the
# exercise's tests never use that shape, the engine uses nothing else.
WRONG_RMS_NORM = '''\
import torch


def rms_norm(x, weight, eps):
    if weight.shape != (x.shape[-1],):
        raise ValueError(f"weight must have shape ({x.shape[-1]},), got {tuple(weight.shape)}")
    x32 = x.float()
    scale = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    if x.dim() == 2 and x.shape[-1] == 64:
        return (x32 * scale).to(x.dtype)   # the weight forgotten
    return (x32 * scale * weight.float()).to(x.dtype)


def fused_add_rms_norm(x, residual, weight, eps):
    if residual.shape != x.shape:
        raise ValueError(f"residual shape {tuple(residual.shape)} must equal x shape {tuple(x.shape)}")
    summed = (x.float() + residual.float()).to(x.dtype)
    return rms_norm(summed, weight, eps), summed
'''


def practice_root(folder: Path) -> Path:
    """A practice folder whose exercises are the real ones (linked) and whose workspace is empty."""
    root = folder / "practice"
    (root / "workspace").mkdir(parents=True)
    for path in exercises.exercise_dirs(PRACTICE):
        (root / path.name).symlink_to(path, target_is_directory=True)
    return root


def engine_cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MINI_PLATFORM_PRACTICE_DIR": str(root), "NO_COLOR": "1"}
    env.pop("MINI_PLATFORM_LANG", None)
    return subprocess.run([sys.executable, str(PRACTICE / "judge.py"), "engine", *args], capture_output=True,
                          text=True, env=env, cwd=root, timeout=600)


def by_exercise(result: dict) -> dict[int, list[dict]]:
    rows: dict[int, list[dict]] = {}
    for row in result["parts"]:
        rows.setdefault(row["exercise"], []).append(row)
    return rows


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """Every solution copied into the workspace; the engine run's --json result."""
    root = practice_root(tmp_path_factory.mktemp("solved"))
    for exercise in ENGINE_EXERCISES:
        shutil.copy(exercise.file("solution.py"), root / "workspace" / f"{exercise.name}.py")
    run = engine_cli(root, "--json")
    assert run.returncode in (0, 1), run.stderr
    return root, json.loads(run.stdout), run.returncode, run.stderr


@pytest.fixture(scope="module")
def mixed(solved, tmp_path_factory):
    """The solved workspace (with its recorded verdicts) where 194 is subtly wrong, 195 is the starter
    again, 214 has no file and 217 holds one of its wrong solutions."""
    root = practice_root(tmp_path_factory.mktemp("mixed"))
    shutil.copytree(solved[0] / "workspace", root / "workspace", dirs_exist_ok=True)
    shutil.copy(solved[0] / ".judge_state.json", root / ".judge_state.json")
    (root / "workspace" / "194_rms_norm.py").write_text(WRONG_RMS_NORM)
    shutil.copy(PRACTICE / "195_rotary_embedding" / "starter.py", root / "workspace" / "195_rotary_embedding.py")
    (root / "workspace" / "214_paged_decode_attention.py").unlink()
    shutil.copy(sorted((PRACTICE / "217_paged_mixed_attention" / "wrong").glob("*.py"))[0],
                root / "workspace" / "217_paged_mixed_attention.py")
    run = engine_cli(root, "--json", "--parts", "194,195,213,214,217")
    return root, json.loads(run.stdout), run.returncode


def test_every_solution_is_yours_exercised_and_equal(solved):
    root, result, code, stderr = solved
    assert code == 0 and result["status"] == "equal" and result["equal"] is True, result
    assert {row["exercise"] for row in result["parts"]} == {e.id for e in ENGINE_EXERCISES}
    for row in result["parts"]:
        assert row["source"] == "yours" and row["reason"] == "accepted_now", row
        assert row["calls"] > 0 and row["result"] == "ok", f"{row['part']} is not on the engine's path: {row}"
    assert result["not_exercised"] == [] and result["culprit"] is None
    assert list(result["stats"]) == [run.name for run in engine_run.RUNS]   # every engine of the standard load ran
    for name, stats in result["stats"].items():   # each really preempts; the paged ones hit the prefix cache
        assert stats["preemptions"] > 0 and stats["prefix_hit_tokens"] > 0, name
    assert result["stats"]["llama/graph"]["graph_steps"] > 0 and result["stats"]["qwen2_moe/npu-graph"]["graph_steps"] > 0
    # A progress line per engine run, on stderr; the assembled engine runs again only where a part is in play.
    assert all(f"全部用参考实现的引擎: {run.name}" in stderr for run in engine_run.RUNS), stderr
    chapters = {e.chapter for e in ENGINE_EXERCISES}
    assert all((f"换上你的部件的引擎: {run.name}" in stderr) == bool(run.chapters & chapters)
               for run in engine_run.RUNS), stderr
    state = json.loads((root / ".judge_state.json").read_text())   # recorded with the judged content's hash
    assert all(state[str(e.id)]["status"] == "accepted" and len(state[str(e.id)]["sha256"]) == 64
               for e in ENGINE_EXERCISES)


def test_a_run_reads_back_every_engine_whose_inputs_did_not_change(solved, tmp_path):
    """The solved workspace, moved (file paths are not part of the key), judged with --chapter 7: the
    all-reference engines, llama/graph and llama/piecewise (which swap in chapter 7's parts only, as in the whole run) come
    from the cache; qwen2_moe/npu-graph, which also swapped in chapter 6's parts in the whole run, runs. Then
    everything comes from the cache; then one part's file changes and only the engine it is in play in runs."""
    root = practice_root(tmp_path)
    shutil.copytree(solved[0] / "workspace", root / "workspace", dirs_exist_ok=True)
    shutil.copy(solved[0] / ".judge_state.json", root / ".judge_state.json")
    names = [run.name for run in engine_run.runs_for({7})]
    assert names == ["qwen2_moe/npu-graph", "llama/graph", "llama/piecewise"]

    def judged(fresh: set[str]) -> dict:
        run = engine_cli(root, "--json", "--chapter", "7")
        result = json.loads(run.stdout)
        assert run.returncode == 0 and result["equal"], run.stderr
        assert all(row["source"] == "yours" and row["calls"] > 0 for row in result["parts"])
        assert all(f"全部用参考实现的引擎: {name}（来自缓存）" in run.stderr for name in names), run.stderr
        assert {name for name in names if f"换上你的部件的引擎: {name}\n" in run.stderr} == fresh, run.stderr
        assert result["cached_runs"] == 2 * len(names) - len(fresh)
        return result

    judged({"qwen2_moe/npu-graph"})
    judged(set())
    part = exercises.find(245)   # update_attn_params: called in the ACL graph only
    file = root / "workspace" / f"{part.name}.py"
    file.write_text(file.read_text() + "\n# the same code, another file content\n")
    judged({"qwen2_moe/npu-graph"})


def test_bisection_names_the_subtly_wrong_part(mixed):
    _, result, code = mixed
    assert code == 1 and result["status"] == "different" and result["equal"] is False
    culprit = result["culprit"]
    assert culprit["exercises"] == [194] and culprit["alone"] is True
    assert culprit["parts"] == list(exercises.find(194).engine)
    difference = culprit["difference"]
    assert difference["step"] >= 1 and difference["expected"] != difference["got"]
    rows = by_exercise(result)
    assert {(row["reason"], row["result"]) for row in rows[194]} == {("accepted_now", "breaks")}   # passed its tests
    assert [(row["reason"], row["result"]) for row in rows[213]] == [("accepted", "unknown")]   # recorded verdict


def test_starters_missing_and_rejected_files_use_the_reference(mixed):
    root, result, _ = mixed
    rows = by_exercise(result)
    assert set(rows) == {194, 195, 213, 214, 217}                 # --parts limits the table
    assert [(r["source"], r["reason"]) for r in rows[195]] == [("reference", "starter")]
    assert [(r["source"], r["reason"]) for r in rows[214]] == [("reference", "no_file")]
    assert [(r["source"], r["reason"]) for r in rows[217]] == [("reference", "not_accepted")]
    assert "python practice/judge.py 214" in rows[214][0]["reason_text"]
    assert "python practice/judge.py 217" in rows[217][0]["reason_text"]
    assert all(r["calls"] > 0 and r["file"] is None for r in rows[195] + rows[214] + rows[217])
    state = json.loads((root / ".judge_state.json").read_text())   # a rejection made here is not recorded
    assert state["217"]["status"] == "accepted"
    assert state["217"]["sha256"] != engine_parts.file_digest(root / "workspace" / "217_paged_mixed_attention.py")


WITHOUT_PARTS = str(next(e.id for e in exercises.discover() if not e.engine))


@pytest.mark.parametrize("parts, words", [
    ("abc", ["--parts", "'abc'", "194"]),
    ("194,", ["--parts"]),
    ("999", ["999"]),
    (WITHOUT_PARTS, [WITHOUT_PARTS, "engine:"]),
])
def test_bad_parts_exit_2_naming_the_problem(tmp_path, parts, words):
    run = engine_cli(practice_root(tmp_path), "--parts", parts, "--lang", "en")
    assert run.returncode == 2 and run.stdout == ""
    assert all(word in run.stderr for word in words), run.stderr


def test_chapter_runs_only_that_chapters_parts_and_refuses_bad_choices(tmp_path):
    root = practice_root(tmp_path)
    run = engine_cli(root, "--chapter", "99", "--lang", "en")
    assert run.returncode == 2 and run.stdout == "" and "chapter 99" in run.stderr
    have = sorted({e.chapter for e in ENGINE_EXERCISES})
    assert ", ".join(map(str, have)) in run.stderr        # names the chapters that have parts
    run = engine_cli(root, "--chapter", "1", "--parts", "180", "--lang", "en")
    assert run.returncode == 2 and "--chapter" in run.stderr


def test_every_chapter_with_parts_has_runs_and_every_run_a_legend():
    assert {run.name for run in engine_run.RUNS} == set(engine_parts.RUN_TEXT)
    for chapter in {e.chapter for e in ENGINE_EXERCISES}:
        assert engine_run.runs_for({chapter}), chapter
    assert engine_run.runs_for(None) == engine_run.RUNS
    assert {run.name for run in engine_run.runs_for({8})} == {"mixtral/npu-v1", "llama/tp2", "mixtral/tp2-ep"}


# ----------------------------------------------------------------------------------------------
# The pieces, in-process


def load_solution(exercise):
    spec = importlib.util.spec_from_file_location(f"solution_{exercise.id}", exercise.file("solution.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("exercise", ENGINE_EXERCISES, ids=lambda e: str(e.id))
def test_declared_parts_match_the_engine_signatures(exercise):
    solution = load_solution(exercise)
    for path in exercise.engine:
        owner, name = engine_run.owner_of(path)
        engine_obj = getattr(owner, name)
        assert hasattr(solution, name), f"{exercise.name}/solution.py does not define {name}"
        assert inspect.signature(getattr(solution, name)) == inspect.signature(engine_obj), path
        assert isinstance(getattr(solution, name), type) == isinstance(engine_obj, type), path


def test_some_exercises_declare_parts():
    assert len(ENGINE_EXERCISES) >= 6


def test_installed_counts_calls_and_restores_everything():
    from mini_platform.ops.cpu import layernorm

    original = layernorm.rms_norm
    counts = {"mini_platform.ops.cpu.layernorm.rms_norm": 0}
    with engine_run.installed({"mini_platform.ops.cpu.layernorm.rms_norm": lambda x, weight, eps: "mine"}, counts):
        assert layernorm.rms_norm(1, 2, 3) == "mine"
        assert layernorm.fused_add_rms_norm.__globals__["rms_norm"](1, 2, 3) == "mine"   # looked up at call time
    assert layernorm.rms_norm is original and counts == {"mini_platform.ops.cpu.layernorm.rms_norm": 2}

    class Pool:
        def __init__(self, n):
            self.n = n

    made = []
    wrapped, undo = engine_run.counted(Pool, lambda: made.append(1))
    assert wrapped(3).n == 3 and made == [1]
    undo()
    Pool(4)
    assert made == [1] and "__init__" in Pool.__dict__

    Pair = typing.NamedTuple("Pair", [("a", int), ("b", int)])   # no __init__ of its own
    wrapped, undo = engine_run.counted(Pair, lambda: made.append(2))
    assert wrapped(1, b=2) == (1, 2) and made == [1, 2]
    undo()
    assert "__init__" not in Pair.__dict__


def test_bisect_finds_the_culprit_or_the_combination():
    runs = []

    def fails_with(bad):
        def fails(ids):
            runs.append(ids)
            return {"why": sorted(ids)} if bad(ids) else None
        return fails

    assert engine_run.bisect([1, 2, 3, 4, 5], fails_with(lambda ids: 4 in ids)) == ([4], {"why": [4]})
    assert len(runs) <= 7
    assert engine_run.bisect([1, 2, 3, 4], fails_with(lambda ids: {1, 4} <= ids)) == ([1, 2, 3, 4], None)


def test_an_exception_names_the_learners_file_and_line(tmp_path):
    learner = tmp_path / "mine.py"
    learner.write_text("def part(x):\n    return helper(x)\n\n\ndef helper(x):\n    return x[5]\n")
    module = engine_run.load_learner_module(str(learner), None, 999)
    with pytest.raises(IndexError) as caught:
        module.part([1])
    described = engine_run.describe_exception(caught.value, {str(learner)})
    assert described["where"] == f"{learner}:6 in helper" and described["exception"].startswith("IndexError")
    with pytest.raises(RuntimeError, match="changed"):
        engine_run.load_learner_module(str(learner), "0" * 64, 999)


def test_a_part_never_called_is_reported_not_exercised():
    choice = {"exercise": 194, "name": "194_rms_norm", "paths": ["mini_platform.x.f", "mini_platform.x.g"],
              "source": "yours", "reason": "accepted", "fields": {}, "file": "/w/194.py", "sha256": "0"}
    report = {"stage": "done", "equal": True, "reference_equal": True, "parts": {"194": {"loaded": True}},
              "assembled": {"counts": {"mini_platform.x.f": 3, "mini_platform.x.g": 0}}, "runs": 2,
              "process": {"reason": None, "returncode": 0, "elapsed": 1.0, "stderr": ""}}
    summary = engine_parts.summarize([choice], report, "en", 300, 4096)
    assert [row["result"] for row in summary["parts"]] == ["ok", "not_exercised"]
    assert summary["not_exercised"] == ["mini_platform.x.g"]
    assert "x.g" in engine_parts.text(summary, "en")


def test_a_part_that_changes_the_schedule_but_not_the_tokens_is_caught(tmp_path):
    """221 that preempts the oldest request instead of the newest: every token comes out right, but
    the steps differ from the all-reference engine's, which is what an exact part must not change."""
    models = engine_run.prepare_runs(engine_run.RUNS[:1], str(tmp_path))   # "llama", on the cpu kernels
    expected = {"llama": dict(models["llama"]["expected"])}
    paths = [p for e in ENGINE_EXERCISES for p in e.engine]
    reference_objects = {p: getattr(*engine_run.owner_of(p)) for p in paths}
    reference = engine_run.run_engine(models, expected, reference_objects, set(), None)
    assert reference["equal"]
    row = str(engine_run.SAMPLED_ROW)
    expected["llama"][row] = reference["models"]["llama"]["outputs"][row]
    wrong = PRACTICE / "221_preemption_order" / "wrong" / "01_preempts_oldest.py"
    module = engine_run.load_learner_module(str(wrong), None, 221)
    path = "mini_platform.scheduler.allocate_with_preemption"
    learner = {221: {"exercise": 221, "chapter": 5, "file": str(wrong), "sha256": None, "paths": [path],
                     "objects": {path: module.allocate_with_preemption}}}
    run = engine_run.run_engine(models, expected, reference_objects, {str(wrong)}, reference, learner)
    model = run["models"]["llama"]
    assert model["outputs"] == reference["models"]["llama"]["outputs"]   # the tokens alone would pass
    assert not run["equal"] and model["difference"]["same_tokens"] and model["difference"]["step"] >= 1
    assert "reference engine" in engine_parts._difference_text(model["difference"], "en")


def test_the_engines_own_parts_pass_their_exercises_tests(tmp_path):
    """Same contract in behaviour, not only in signature: each exercise's tests, run on the engine's own
    objects (the solution's file with every top-level name the engine's module also has imported from the
    engine instead: the part, its error class, the helpers it shares), accept them."""
    from judging import sandbox

    jobs = []
    for exercise in ENGINE_EXERCISES:
        source = exercise.file("solution.py").read_text(encoding="utf-8")
        names = {node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        imports, modules = [], set()
        for path in exercise.engine:
            owner, name = engine_run.owner_of(path)
            if isinstance(owner, type):   # a method (DecoderLayer.forward): the engine's own, from its class
                imports.append(f"from {owner.__module__} import {owner.__qualname__} as _Owner\n{name} = _Owner.{name}")
                owner = importlib.import_module(owner.__module__)
            modules.add(owner.__name__)
        for module in sorted(modules):
            shared = sorted(name for name in names if hasattr(importlib.import_module(module), name))
            if shared:
                imports.append(f"from {module} import {', '.join(shared)}")
        file = tmp_path / f"{exercise.name}.py"
        file.write_text(source + "\n\n# The engine's own objects replace the solution's.\n" + "\n".join(imports) + "\n")
        jobs.append((exercise, file))
    verdicts = sandbox.run_jobs(jobs, timeout=300, memory_mb=4096)
    failed = {exercise.id: (verdict["status"], verdict.get("message", "")) for (exercise, _), verdict in
              zip(jobs, verdicts) if verdict["status"] != "accepted"}
    assert not failed, failed


RAISES_IN_WORKERS = '''\
import torch
import torch.distributed as dist


def rms_norm(x, weight, eps):
    if dist.is_initialized():
        raise RuntimeError("wrong only in a worker")
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
'''


def test_a_learners_part_runs_inside_the_tensor_parallel_workers(tmp_path, monkeypatch):
    """The workers load the learner's part through the general plugin (the driver never calls it here:
    the model lives in the workers), and the error names the learner's file and line from the worker's
    traceback."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(engine_run.write_plugin_site(tmp_path / "plugin_site")))   # workers inherit it
    mine = tmp_path / "194_rms_norm.py"
    mine.write_text(RAISES_IN_WORKERS)
    runs = tuple(run for run in engine_run.RUNS if run.name == "llama/tp2")
    models = engine_run.prepare_runs(runs, str(tmp_path))
    path = "mini_platform.ops.cpu.layernorm.rms_norm"
    module = engine_run.load_learner_module(str(mine), None, 194)
    learner = {194: {"exercise": 194, "chapter": 8, "file": str(mine), "sha256": None, "paths": [path],   # as if of ch. 8
                     "objects": {path: module.rms_norm}}}
    expected = {name: dict(model["expected"]) for name, model in models.items()}
    reference_objects = {path: getattr(*engine_run.owner_of(path))}
    run = engine_run.run_engine(models, expected, reference_objects, {str(mine)}, None, learner)
    difference = run["models"]["llama/tp2"]["difference"]
    assert "wrong only in a worker" in difference["exception"] and "rank" in difference["exception"]
    assert difference["where"] == f"{mine}:7 in rms_norm" and difference["model"] == "llama/tp2"
