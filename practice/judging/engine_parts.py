"""``python practice/judge.py engine``: the engine assembled from the learner's accepted solutions.

An exercise whose problem.md declares ``engine:`` parts (dotted paths of engine functions or classes)
has a solution that can stand in for them. Per exercise, the learner's version is used when the
workspace file exists, is not the starter unchanged, and is accepted: by the verdict progress.py
recorded for the same content (its sha256), or else judged now. Files judged now go through one
child together (sandbox.run_jobs: torch is imported once; a file can only sway its own verdict,
and an accepted one is checked again by the engine run itself); accepted verdicts are recorded like
``judge.py ID`` records them, so the next run skips them. Otherwise the engine's own version is
used, with the reason. ``--parts 194,213`` limits which exercises may be the learner's (and the table)
and the engines to those that serve their chapters; ``--chapter 6`` takes that chapter's exercises.

The run happens in engine_run.py inside an isolated child (sandbox.run_child: time and
memory limits, its own process group, the learner's files only read). This module prepares it and
turns its result into the summary (``summarize``: the schema ``--json`` prints) and the table (``text``).
``run_for_chapter(N)`` is the closing cell of chapter N's notebook ("用你的实现跑引擎").
Standard library only.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path
from typing import Callable

from . import exercises, render, sandbox
from .exercises import Exercise, ExerciseError
from .progress import Progress, file_digest

ENGINE_RUN = f"{__package__}.engine_run"   # the child's module (sandbox.run_child runs it with -m)
JUDGE = exercises.PRACTICE_DIR / "judge.py"
MEMORY_MB = 4096      # address space per process (the TP workers each have their own): torch + transformers + tiny models
TIMEOUT = 600.0       # seconds for the whole run, bisection included (about 80 s on 2 idle cores with every part)

REASONS = {
    "accepted": ("你的（已通过评测）", "yours (accepted)"),
    "accepted_now": ("你的（刚刚评测通过）", "yours (accepted just now)"),
    "no_file": ("参考实现：还没有工作文件（python practice/judge.py {id} 会创建它）",
                "reference: no workspace file yet (python practice/judge.py {id} creates it)"),
    "starter": ("参考实现：工作文件还是起始代码", "reference: the workspace file is still the starter"),
    "not_accepted": ("参考实现：还没有通过评测（{status}，{passed}/{total}；python practice/judge.py {id}）",
                     "reference: not accepted yet ({status}, {passed}/{total}; python practice/judge.py {id})"),
    "needs": ("参考实现：本机缺少 {missing}", "reference: {missing} is not installed here"),
    "import_error": ("参考实现：导入你的文件时出错：{error}", "reference: importing your file raised {error}"),
}
STAGES = {"start": ("启动", "start"), "setup": ("准备", "setup"),
          "transformers": ("用 transformers 生成参照", "transformers' reference tokens"),
          "reference": ("全部用参考实现的引擎", "the all-reference engine"),
          "assembled": ("换上你的部件的引擎", "the engine with your parts"), "bisect": ("二分查找", "bisection")}
# What each run of engine_run.RUNS is (the table's legend).
RUN_TEXT = {
    "llama": ("cpu 内核，eager", "cpu kernels, eager"),
    "mixtral": ("cpu 内核，eager", "cpu kernels, eager"),
    "llama/b8": ("整段预填充（不分块）、最多 3 个请求、5 个 8 token 的块、上下文 24 个 token",
                 "whole prompts (no chunking), at most 3 requests, 5 blocks of 8 tokens, a 24-token context"),
    "mixtral/triton": ("Triton 内核，在 Triton 解释器里运行", "Triton kernels, run in the Triton interpreter"),
    "qwen2_moe/npu-graph": ("npu 内核对照 torch_npu 的 CPU 模拟，5 个 16 token 的块，解码走 ACL 图（模拟）",
                            "npu kernels against the CPU emulation of torch_npu, 5 blocks of 16 tokens, decode in ACL "
                            "graphs (emulated)"),
    "mixtral/npu-v1": ("npu 内核（模拟的 torch_npu），5 个 16 token 的块，MoE 走 v1 调用序列，每步按 vllm-ascend 的规则选通信方式"
                       "（moe_comm=\"auto\"）",
                       "npu kernels (emulated torch_npu), 5 blocks of 16 tokens, the v1 MoE calls, each step's MoE exchange "
                       "chosen by vllm-ascend's rule (moe_comm=\"auto\")"),
    "llama/graph": ("解码走 CPU 图", "decode in CPU graphs"),
    "llama/piecewise": ("torch.compile 在注意力处切开：解码走整图，其余步走分段图（CPU 图）",
                        "torch.compile split at attention: decode in full graphs, other steps in piecewise graphs "
                        "(CPU graphs)"),
    "llama/tp2": ("张量并行：2 个 worker 进程，gloo", "tensor parallel: 2 worker processes over gloo"),
    "mixtral/tp2-ep": ("张量并行 + 专家并行：2 个 worker 进程，gloo", "tensor + expert parallel: 2 worker processes over gloo"),
    "deepseek_v3": ("DeepSeek-V3 结构（MLA + 分组路由），cpu 内核，eager", "DeepSeek-V3 shape (MLA + grouped routing), cpu kernels, eager"),
    "deepseek_v3/npu": ("DeepSeek-V3 结构，npu 内核对照 torch_npu 的 CPU 模拟，5 个 16 token 的块",
                        "DeepSeek-V3 shape, npu kernels against the CPU emulation of torch_npu, 5 blocks of 16 tokens"),
}
RESULTS = {"ok": ("正常", "ok"), "not_exercised": ("没有被调用", "not exercised"),
           "not_reached": ("没走到（引擎先停了）", "not reached (the engine stopped first)"),
           "breaks": ("让引擎出错", "breaks the engine"), "unknown": ("—", "—")}


def _tr(lang: str, pair: tuple[str, str], **fields) -> str:
    return pair[1 if lang == "en" else 0].format(**fields)


# ----------------------------------------------------------------------------------------------
# Which exercises, and whose version


def engine_exercises(root: Path) -> list[Exercise]:
    """The exercises under ``root`` that declare engine parts (broken folders are skipped: ``list``
    and ``check`` report them)."""
    found = []
    for path in exercises.exercise_dirs(root):
        try:
            exercise = exercises.load_exercise(path)
        except ExerciseError:
            continue
        if exercise.engine:
            found.append(exercise)
    return found


def select(text: str | None, available: list[Exercise], root: Path) -> list[Exercise]:
    """The exercises ``--parts`` names (all of ``available`` when None). Raises ExerciseError naming
    what is wrong: not a list of ids, an unknown id, an id without engine parts."""
    if text is None:
        return list(available)
    ids = [item.strip() for item in text.split(",")]
    with_parts = ", ".join(str(e.id) for e in available) or "-"
    if not ids or not all(re.fullmatch(r"\d{3}", item) for item in ids):
        raise ExerciseError(f"--parts 应为逗号分隔的练习编号，如 --parts 194,213，实际是 {text!r}（有引擎部件的练习：{with_parts}）",
                            f"--parts takes exercise ids separated by commas, e.g. --parts 194,213; got {text!r} "
                            f"(exercises with engine parts: {with_parts})")
    chosen = []
    for item in dict.fromkeys(ids):
        exercise = exercises.find(item, root)   # an unknown id raises, listing the ids there are
        if not exercise.engine:
            raise ExerciseError(f"练习 {exercise.id} 没有引擎部件（它的 problem.md 里没有 engine:），不能换进引擎；"
                                f"有引擎部件的练习：{with_parts}",
                                f"exercise {exercise.id} has no engine parts (its problem.md declares no engine:), so "
                                f"nothing of it goes into the engine; exercises with engine parts: {with_parts}")
        chosen.append(exercise)
    return chosen


def select_chapter(chapter: int, available: list[Exercise]) -> list[Exercise]:
    """The exercises of ``chapter`` that declare engine parts; raises ExerciseError naming the chapters that
    have some when it has none."""
    chosen = [e for e in available if e.chapter == chapter]
    if not chosen:
        have = ", ".join(str(n) for n in sorted({e.chapter for e in available})) or "-"
        raise ExerciseError(f"第 {chapter} 章没有声明引擎部件的练习；有引擎部件的章：{have}",
                            f"chapter {chapter} has no exercise with engine parts; chapters that have some: {have}")
    return chosen


def choose(selected: list[Exercise], progress: Progress, lang: str) -> list[dict]:
    """Per selected exercise: whether the learner's version is used (``source`` "yours" or
    "reference"), the reason, and the file with the sha256 of its judged content."""
    choices, to_judge = [], []
    state = progress.load()
    for exercise in selected:
        file = progress.workspace_file(exercise)
        choice = {"exercise": exercise.id, "name": exercise.name, "paths": list(exercise.engine),
                  "source": "reference", "reason": "", "fields": {"id": exercise.id}, "file": None, "sha256": None}
        choices.append(choice)
        missing = [name for name in exercise.requires if importlib.util.find_spec(name) is None]
        if missing:
            choice.update(reason="needs", fields={"missing": ", ".join(missing)})
            continue
        if not file.is_file():
            choice["reason"] = "no_file"
            continue
        digest = file_digest(file)
        if digest == file_digest(exercise.file("starter.py")):
            choice["reason"] = "starter"
            continue
        choice.update(file=str(file), sha256=digest)
        entry = state.get(str(exercise.id))
        if isinstance(entry, dict) and entry.get("sha256") == digest and entry.get("status") == "accepted":
            choice.update(source="yours", reason="accepted")
        else:
            to_judge.append((exercise, choice))
    if to_judge:
        jobs = [(exercise, Path(choice["file"])) for exercise, choice in to_judge]
        timeout = max(exercise.timeout for exercise, _ in to_judge)
        memory = max(sandbox.memory_limit_mb(exercise) for exercise, _ in to_judge)
        for (exercise, choice), verdict in zip(to_judge, sandbox.run_jobs(jobs, timeout, memory, lang)):
            if verdict["status"] == "accepted":
                progress.record(exercise, verdict, Path(choice["file"]), choice["sha256"])
                choice.update(source="yours", reason="accepted_now")
            else:
                choice.update(reason="not_accepted", file=None, sha256=None,
                              fields={"id": exercise.id, "status": render.status_text(verdict["status"], lang),
                                      "passed": verdict["counts"]["passed"], "total": verdict["counts"]["total"]})
    return choices


# ----------------------------------------------------------------------------------------------
# The run


def run(choices: list[dict], every: list[Exercise], timeout: float = TIMEOUT, memory_mb: int = MEMORY_MB,
        chapters: list[int] | None = None, on_progress: Callable[[str], None] = lambda text: None,
        cache: Path | None = None) -> dict:
    """Run engine_run.py isolated: every exercise of ``every`` has its parts counted, the learner's
    files of ``choices`` (source "yours") are swapped in; only the runs that serve ``chapters`` (all for
    None); runs found in the ``cache`` folder are read back (engine_cache.py; None: no cache). ``on_progress``
    gets a line per engine run as the child starts it. Returns the child's report
    plus the process facts: ``process`` = {"reason", "returncode", "elapsed", "stderr"}."""
    mine = {c["exercise"]: c for c in choices if c["source"] == "yours"}
    parts = [{"exercise": e.id, "chapter": e.chapter, "paths": list(e.engine),
              "file": mine[e.id]["file"] if e.id in mine else None,
              "sha256": mine[e.id]["sha256"] if e.id in mine else None} for e in every]
    env = {key: value for key, value in sandbox.child_env().items()   # the platform is chosen afresh, by the rules
           if not key.startswith("MINI_PLATFORM") or key in ("MINI_PLATFORM_PRACTICE_DIR", "MINI_PLATFORM_LANG")}
    # The standard load is a CPU run: the Triton kernels run in the Triton interpreter, GPU or not.
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TRANSFORMERS_VERBOSITY="error",
               TOKENIZERS_PARALLELISM="false", TRITON_INTERPRET="1")
    with tempfile.TemporaryDirectory(prefix="mini-engine-spec-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"parts": parts, "chapters": chapters,
                                    "cache": str(cache) if cache else None}), encoding="utf-8")
        child = sandbox.run_child(ENGINE_RUN, [str(spec)], env, timeout, memory_mb, on_progress)
    report = child["verdicts"][0] if child["verdicts"] else {"stage": "start"}
    report["process"] = {"reason": child["reason"], "returncode": child["returncode"],
                         "elapsed": round(child["elapsed"], 2), "stderr": child["stderr"]}
    return report


def chapters_of(selected: list[Exercise], chapter: int | None, every: list[Exercise]) -> list[int] | None:
    """The chapters whose runs are needed: ``chapter``, else those of the selected exercises, else
    None (every run) when the selection is every exercise with parts."""
    if chapter is not None:
        return [chapter]
    if {e.id for e in selected} == {e.id for e in every}:
        return None
    return sorted({e.chapter for e in selected})


def _learner_frames(stderr: str, files: list[str]) -> str:
    """The frames of a faulthandler dump that are in the learner's files, innermost first."""
    frames = []
    for line in stderr.splitlines():
        match = re.search(r'File "([^"]+)", line (\d+) in (\S+)', line)
        if match and match.group(1) in files:
            frames.append(f"{match.group(1)}:{match.group(2)} in {match.group(3)}")
    return "\n".join(frames[:8])


def summarize(choices: list[dict], report: dict, lang: str, timeout: float, memory_mb: int) -> dict:
    """The result ``--json`` prints: ``status`` (equal, different, reference_differs, timeout, crashed),
    ``equal``, one row per part, the difference, the culprit, the statistics of the standard run."""
    process = report.pop("process")
    loaded = report.get("parts", {})
    assembled = report.get("assembled") or {}
    counts = assembled.get("counts", {})
    reference_counts = (report.get("reference") or {}).get("counts", {})   # for the rows the engine's own version serves
    stopped = any((m.get("difference") or {}).get("exception") for m in assembled.get("models", {}).values())
    culprit = report.get("culprit")
    blamed = set(culprit["exercises"]) if culprit else set()
    if report.get("stage") == "done":
        status = "equal" if report["equal"] else "reference_differs" if not report["reference_equal"] else "different"
    else:
        status = "timeout" if process["reason"] == "timeout" else "crashed"
    rows = []
    for choice in choices:
        source, reason, fields = choice["source"], choice["reason"], choice["fields"]
        failed = loaded.get(str(choice["exercise"]), {})
        if source == "yours" and failed and not failed.get("loaded"):
            error = failed.get("error") or {}
            source, reason = "reference", "import_error"
            fields = {"error": f"{error.get('exception', '?')} ({error.get('where', '')})"}
        for path in choice["paths"]:
            calls = counts.get(path, reference_counts.get(path) if source == "reference" else None)
            result = ("unknown" if calls is None else ("not_reached" if stopped else "not_exercised") if calls == 0
                      else "breaks" if choice["exercise"] in blamed and source == "yours"
                      else "ok" if status == "equal" else "unknown")
            rows.append({"exercise": choice["exercise"], "name": choice["name"], "part": path, "source": source,
                         "reason": reason, "reason_text": _tr(lang, REASONS[reason], **fields),
                         "file": choice["file"] if source == "yours" else None, "calls": calls, "result": result})
    files = [c["file"] for c in choices if c["file"]]
    summary = {
        "status": status, "equal": status == "equal", "stage": report.get("stage"), "parts": rows,
        "not_exercised": sorted({r["part"] for r in rows if r["result"] == "not_exercised"}),
        "difference": report.get("difference"), "culprit": None, "runs": report.get("runs", 0),
        "cached_runs": report.get("cached_runs", 0),
        "stats": {arch: m.get("stats") for arch, m in (report.get("reference") or {}).get("models", {}).items()},
        "wall_time": process["elapsed"], "timeout": timeout, "memory_limit_mb": memory_mb,
        "process_stderr": process["stderr"] if status in ("timeout", "crashed") else "",
        "where": _learner_frames(process["stderr"], files) if status in ("timeout", "crashed") else "",
    }
    if culprit:
        names = {c["exercise"]: c for c in choices}
        summary["culprit"] = {**culprit, "parts": [p for i in culprit["exercises"] for p in names[i]["paths"]],
                              "files": [names[i]["file"] for i in culprit["exercises"]]}
    return summary


# ----------------------------------------------------------------------------------------------
# The table


def _short(path: str) -> str:
    return path.removeprefix("mini_platform.")


def _cells(text: str) -> int:
    """Terminal cells ``text`` takes (a CJK character takes two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _cells(text))


def _shown(file: str) -> str:
    try:
        return str(Path(file).relative_to(Path.cwd()))
    except ValueError:
        return file


def _difference_text(d: dict, lang: str) -> str:
    if d.get("exception"):
        where = f"（{d['where']}）" if lang != "en" else f" ({d['where']})"
        return _tr(lang, ("{model} 模型在第 {step} 步抛出异常：{exc}{where}", "the {model} model raised at step {step}: "
                          "{exc}{where}"), model=d["model"], step=d["step"], exc=d["exception"], where=where)
    same = _tr(lang, ("输出的 token 都对，但", "The output tokens are right, but ")) if d.get("same_tokens") else ""
    if d.get("step"):
        def token(value):
            return _tr(lang, ("没有 token", "no token")) if value is None else f"token {value}"
        return same + _tr(lang, ("{model} 模型的第 {step} 步第一次和参考引擎不同：请求 {request} 应得到 {want}，实际是 {got}",
                                 "the {model} model first differs from the reference engine at engine step {step}: "
                                 "request {request} should get {want}, got {got}"),
                          model=d["model"], step=d["step"], request=d["request"], want=token(d["expected"]),
                          got=token(d["got"]))
    if d.get("same_tokens"):
        return same + _tr(lang, ("{model} 模型的统计和参考引擎不同：应为 {want}，实际是 {got}",
                                 "the {model} model's statistics differ from the reference engine's: expected "
                                 "{want}, got {got}"), model=d["model"], want=d["expected_stats"], got=d["got_stats"])
    return _tr(lang, ("{model} 模型的请求 {request} 应得到 {want}，实际是 {got}",
                      "the {model} model's request {request} should get {want}, got {got}"),
               model=d["model"], request=d["request"], want=d["expected_tokens"], got=d["got_tokens"])


def text(summary: dict, lang: str, colour=lambda text, code: text) -> str:
    """The summary as a table and a verdict line for the terminal."""
    out = [colour(_tr(lang, ("用你的实现跑引擎：{n} 个小模型引擎（fp32），对照 transformers",
                             "Your engine: {n} engines on tiny models (fp32) against transformers"),
                      n=len(summary["stats"]) or "?"), "1")]
    header = _tr(lang, ("练习", "exercise")), _tr(lang, ("部件", "part")), _tr(lang, ("调用", "calls")), \
        _tr(lang, ("结果", "result")), _tr(lang, ("用的是", "version used"))
    width = max([len(_short(r["part"])) for r in summary["parts"]] + [20])
    wide = max(_cells(text) for text in [header[3]] + [_tr(lang, RESULTS[r["result"]]) for r in summary["parts"]])
    out.append(f"  {_pad(header[0], 8)} {_pad(header[1], width)} {_pad(header[2], 6)} {_pad(header[3], wide)} {header[4]}")
    for row in summary["parts"]:
        calls = "?" if row["calls"] is None else str(row["calls"])
        result = _pad(_tr(lang, RESULTS[row["result"]]), wide)
        code = {"ok": "32", "breaks": "31", "not_exercised": "33"}.get(row["result"], "0")
        used = row["reason_text"] + (f"  {_shown(row['file'])}" if row["file"] else "")
        out.append(f"  {row['exercise']:<8} {_short(row['part']):<{width}} {calls:<6} {colour(result, code)} {used}")
    stats = summary["stats"]
    if stats and all(stats.values()):
        out.append(_tr(lang, ("标准运行：5 个请求（4 个共享前缀，1 个带停止 token，1 个带种子的采样），每步最多 16 个 token（分块预填充），"
                              "14 个 4 token 的 KV 块；各个引擎：", "Standard run: 5 requests (4 share a prefix, 1 with a stop "
                              "token, 1 seeded sampled), at most 16 tokens a step (chunked prefill), 14 KV blocks of 4 "
                              "tokens; the engines:")))
        width = max(len(name) for name in stats)
        for name, s in stats.items():
            out.append(f"  {name:<{width}}  " + _tr(lang, RUN_TEXT.get(name, (name, name))) + _tr(lang, (
                "；{steps} 步、抢占 {preemptions} 次、前缀缓存命中 {prefix_hit_tokens} 个 token、图重放 {graph_steps} 步",
                "; {steps} steps, {preemptions} preemptions, {prefix_hit_tokens} prefix-cache hit tokens, "
                "{graph_steps} graph replays"), **s))
    if summary["not_exercised"]:
        out.append(colour(_tr(lang, ("没有被调用的部件（声明了，但标准运行没有走到它）：{parts}",
                                     "Parts never called (declared, but the standard run does not reach them): {parts}"),
                              parts=", ".join(map(_short, summary["not_exercised"]))), "33"))
    status = summary["status"]
    if status in ("timeout", "crashed"):
        why = ("超过 {t:g} 秒的时间限制", "it ran past the {t:g} s limit") if status == "timeout" \
            else ("进程崩溃了", "the process crashed")
        stage = _tr(lang, STAGES.get(summary["stage"], (summary["stage"],) * 2))
        out.append(colour(_tr(lang, ("运行在「{stage}」这一步停下了：{why}", "The run stopped during {stage}: {why}"),
                              stage=stage, why=_tr(lang, why, t=summary["timeout"])), "31"))
        if summary["where"]:
            out.append(_tr(lang, ("当时在你的代码里：", "It was in your code at:")) + "\n    "
                       + summary["where"].replace("\n", "\n    "))
        elif summary["process_stderr"].strip():
            out.append("    " + summary["process_stderr"].strip()[-1500:].replace("\n", "\n    "))
    elif status == "reference_differs":
        out.append(colour(_tr(lang, ("全部用参考实现的引擎本身就和 transformers 不一致（这是 mini_platform 的问题，不是你的代码）：",
                                     "The all-reference engine itself differs from transformers (a bug in mini_platform, "
                                     "not in your code): ")) + _difference_text(summary["difference"], lang), "31"))
    elif status == "different":
        culprit = summary["culprit"]
        if culprit and culprit["alone"]:
            out.append(colour(_tr(lang, ("二分查找找到了出问题的部件：练习 {id}（{parts}，{file}）：只换上它，引擎的输出就变了。",
                                         "Bisection found the part that breaks it: exercise {id} ({parts}, {file}): with "
                                         "only it swapped in, the engine's output changes."),
                                  id=culprit["exercises"][0], parts=", ".join(p.rsplit(".", 1)[1] for p in culprit["parts"]),
                                  file=_shown(culprit["files"][0])), "31"))
            out.append("  " + _difference_text(culprit["difference"], lang))
        elif culprit:
            out.append(colour(_tr(lang, ("单独换上哪一个都不出错，这几个练习合在一起才出错：{ids}",
                                         "No part breaks the engine alone; these exercises do together: {ids}"),
                                  ids=", ".join(map(str, culprit["exercises"]))), "31"))
            out.append("  " + _difference_text(summary["difference"], lang))
    equal = {"equal": _tr(lang, ("是", "yes"))}.get(status, _tr(lang, ("否", "no")))
    line = _tr(lang, ("整个引擎与 transformers 一致：{equal}（贪心请求逐 token 对照 transformers，采样请求和每一步的调度对照"
                      "全部用参考实现的引擎）",
                      "Whole engine equal to transformers: {equal} (greedy requests token for token against "
                      "transformers; the sampled one and every step's schedule against the all-reference engine)"),
               equal=equal)
    out.append(colour(line, "1;32" if status == "equal" else "1;31"))
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# The notebooks


def run_for_chapter(chapter: int, lang: str = "zh") -> int:
    """Run ``judge.py engine --chapter N`` in a subprocess (isolated like any judging, on the learner's
    workspace: their accepted parts, the reference parts where they have none yet) and print what it
    prints; returns its exit status."""
    root = Path(os.environ.get("MINI_PLATFORM_PRACTICE_DIR") or exercises.PRACTICE_DIR)
    if not any(e.chapter == chapter for e in engine_exercises(root)):
        print(_tr(lang, ("第 {n} 章还没有声明引擎部件的练习。", "No exercise of chapter {n} declares engine parts yet."), n=chapter))
        return 0
    print(f"$ python practice/judge.py engine --chapter {chapter}\n")
    done = subprocess.run([sys.executable, str(JUDGE), "engine", "--chapter", str(chapter), "--lang", lang],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    print(done.stdout + done.stderr)
    return done.returncode
