"""The run behind ``python practice/judge.py engine``, inside its isolated child process.

``python practice/engine_run.py RESULT_FILE MEMORY_MB SPEC_FILE`` is started by sandbox.run_child
(practice/engine_parts.py decides what goes in SPEC_FILE); it is not meant to be run by hand. The spec
names every engine part an exercise declares and, where the learner's version is to be used, the
workspace file and the sha256 of the content that was judged::

    {"parts": [{"exercise": 194, "paths": ["mini_platform.ops.cpu.layernorm.rms_norm", ...],
                "file": "/.../workspace/194_rms_norm.py" or null, "sha256": "..." or null}]}

The standard run, on each tiny checkpoint (a Llama and a Mixtral, written with fixed seeds to a
temporary folder by mini_platform.model.tiny): five requests through ``LLMEngine.add_request`` /
``step`` with fp32, the cpu kernel backend and eager execution, few KV blocks (preemption), a small
token budget per step (chunked prefill), prompts sharing a prefix (prefix caching), a stop token
and one seeded sampled request. The greedy rows must equal transformers' greedy generation; the
sampled row must equal what the all-reference engine samples (transformers samples differently).
The platform is resolved afresh for every engine built, so platform-layer parts run too.

The learner's files are only read: each is compiled from its bytes under its own path (tracebacks
name the learner's file and line) and executed into a fresh module. Every declared part, learner's
or reference, is wrapped to count its calls (a class counts its instances) and put at its dotted
path with ``setattr``; everything is restored after each run. When the assembled engine differs from
the expected tokens (or raises), a binary search over the learner's exercises finds the one that
breaks it alone, with the first engine step whose tokens differ from the all-reference engine's.

The result (rewritten after each stage, so that a crash or a time-out still tells how far it got)::

    {"stage": "done", "parts": {id: {"loaded": bool, "error": str}}, "reference": RUN, "assembled": RUN,
     "equal": bool, "reference_equal": bool, "difference": DIFF or null, "culprit": {...} or null,
     "runs": int}

RUN = {"counts": {path: calls}, "models": {arch: {"equal", "difference", "stats", "steps"}}};
DIFF = {"model", "step", "request", "expected", "got"} or {"model", "exception", "where"}.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
import random
import sys
import traceback
import types
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Iterator

import sandbox

ARCHS = ("llama", "mixtral")
SEEDS = {"llama": 0, "mixtral": 1}
VOCAB = 257                      # mini_platform.model.tiny's vocabulary
MAX_TOKENS = 8
MAX_STEPS = 400                  # an engine that has not finished by then is not making progress
ENGINE_OPTIONS = {"block_size": 4, "num_kv_blocks": 14, "max_num_seqs": 8, "max_num_batched_tokens": 16,
                  "enable_prefix_caching": True, "enable_chunked_prefill": True, "dtype": "float32",
                  "backend": "cpu", "device": "cpu", "enforce_eager": True}
STOP_ROW, SAMPLED_ROW = 2, 3     # the request with a stop token; the seeded sampled one


def standard_prompts() -> list[list[int]]:
    """Five prompts of different lengths; four share a 9-token prefix (two full blocks of 4)."""
    rng = random.Random(0)

    def draw(n: int) -> list[int]:
        return [rng.randrange(3, VOCAB) for _ in range(n)]

    prefix = draw(9)
    return [prefix + draw(3), prefix + draw(11), draw(5), prefix + draw(6), prefix + draw(1)]


# ----------------------------------------------------------------------------------------------
# Checkpoints and what transformers generates


def prepare_model(arch: str, folder: str) -> dict:
    """Write the tiny checkpoint; return its path, the requests and the greedy tokens transformers
    generates for the greedy rows (the stop row cut after its stop token)."""
    import torch
    import transformers
    from mini_platform import SamplingParams
    from mini_platform.model import make_tiny_checkpoint

    transformers.utils.logging.disable_progress_bar()
    path = make_tiny_checkpoint(Path(folder) / arch, arch=arch, seed=SEEDS[arch])
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path), attn_implementation="eager").eval()
    model.generation_config.eos_token_id = None        # else generate fills in the config's EOS
    config = transformers.GenerationConfig(max_new_tokens=MAX_TOKENS, do_sample=False, eos_token_id=None,
                                           pad_token_id=0)
    prompts, rows, expected = standard_prompts(), [], {}
    for i, prompt in enumerate(prompts):
        if i == SAMPLED_ROW:
            rows.append((prompt, SamplingParams(temperature=0.8, top_k=40, top_p=0.9, max_tokens=MAX_TOKENS,
                                                seed=1234, ignore_eos=True)))
            continue
        ids = torch.tensor([prompt])
        with torch.no_grad():
            tokens = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=config)
        tokens = tokens[0, len(prompt):].tolist()
        stop = []
        if i == STOP_ROW:
            stop = [tokens[2]]
            tokens = tokens[:tokens.index(stop[0]) + 1]
        rows.append((prompt, SamplingParams(temperature=0, max_tokens=MAX_TOKENS, stop_token_ids=stop,
                                            ignore_eos=True)))
        expected[str(i)] = tokens
    return {"path": str(path), "rows": rows, "expected": expected}


# ----------------------------------------------------------------------------------------------
# Parts: loading the learner's, counting, swapping


def load_learner_module(file: str, sha256: str | None, exercise: int) -> types.ModuleType:
    """Execute the learner's file into a fresh module (the file is only read)."""
    data = Path(file).read_bytes()
    if sha256 and hashlib.sha256(data).hexdigest() != sha256:
        raise RuntimeError("the file changed after it was judged; run the command again")
    name = f"learner_{exercise}"
    module = types.ModuleType(name)
    module.__file__ = file
    sys.modules[name] = module   # dataclasses and pickling look the module up by name
    exec(compile(data, file, "exec"), module.__dict__)
    return module


def owner_of(path: str) -> tuple[Any, str]:
    """The object holding the last name of ``path`` (a module, or a class inside one) and that name."""
    names = path.split(".")
    for cut in range(len(names) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(names[:cut]))
        except ModuleNotFoundError:
            continue
        for name in names[cut:-1]:
            owner = getattr(owner, name)
        return owner, names[-1]
    raise ModuleNotFoundError(f"no module in {path}")


def counted(obj: Any, count: Callable[[], None]) -> tuple[Any, Callable[[], None]]:
    """``obj`` counting its calls (a class: its instances), and how to undo that."""
    if isinstance(obj, type):
        had, original = "__init__" in obj.__dict__, obj.__init__
        # object.__init__ refuses arguments once a class defines __init__ (a NamedTuple's come through __new__)
        init = original if original is not object.__init__ else (lambda self, *args, **kwargs: None)

        @functools.wraps(original)
        def __init__(self, *args, **kwargs):
            if type(self) is obj:
                count()
            init(self, *args, **kwargs)

        obj.__init__ = __init__
        return obj, (lambda: setattr(obj, "__init__", original)) if had else (lambda: delattr(obj, "__init__"))

    @functools.wraps(obj)
    def wrapper(*args, **kwargs):
        count()
        return obj(*args, **kwargs)

    return wrapper, lambda: None


@contextlib.contextmanager
def installed(objects: dict[str, Any], counts: dict[str, int]) -> Iterator[None]:
    """Put ``objects[path]`` (counted into ``counts[path]``) at every path; restore all afterwards."""
    from mini_platform import platforms

    undo = []
    try:
        for path, obj in objects.items():
            owner, name = owner_of(path)
            wrapped, unwrap = counted(obj, functools.partial(_bump, counts, path))
            undo.append((owner, name, getattr(owner, name), unwrap))
            setattr(owner, name, wrapped)
        platforms.clear_current_platform()   # resolve the platform afresh, through the parts in play
        yield
    finally:
        for owner, name, original, unwrap in reversed(undo):
            setattr(owner, name, original)
            unwrap()
        platforms.clear_current_platform()


def _bump(counts: dict[str, int], path: str) -> None:
    counts[path] += 1


# ----------------------------------------------------------------------------------------------
# One engine run and its comparison


def describe_exception(exc: BaseException, learner_files: set[str]) -> dict:
    """``{"exception": "Type: message", "where": "file:line in function"}``, the frame in a learner's
    file when there is one (innermost), else the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if f.filename in learner_files]
    frame = (mine or frames or [None])[-1]
    where = f"{frame.filename}:{frame.lineno} in {frame.name}" if frame else ""
    text = f"{type(exc).__name__}: {exc}".strip()
    return {"exception": text[:1000], "where": where, "in_learner_file": bool(mine)}


def run_model(model: dict, learner_files: set[str]) -> dict:
    """Run the standard requests on one checkpoint: the tokens of each step, the finished outputs,
    the engine's statistics; or the exception that stopped it."""
    import torch
    from mini_platform import LLMEngine

    torch.manual_seed(0)
    steps: list[list] = []
    try:
        engine = LLMEngine(model["path"], **ENGINE_OPTIONS)
        for i, (prompt, params) in enumerate(model["rows"]):
            engine.add_request(prompt, params, request_id=str(i))
        outputs = {}
        while engine.has_unfinished_requests():
            if len(steps) == MAX_STEPS:
                raise RuntimeError(f"the engine had not finished after {MAX_STEPS} steps (no progress?)")
            step = engine.step()
            steps.append(sorted([o.request_id, o.token_ids[-1]] for o in step if o.token_ids))
            outputs.update({o.request_id: o.token_ids for o in step if o.finished})
        stats = engine.stats()
    except (Exception, SystemExit) as exc:   # noqa: BLE001 - whatever the parts raise is the result
        return {"steps": steps, "error": describe_exception(exc, learner_files)}
    return {"steps": steps, "outputs": outputs,
            "stats": {"steps": len(steps), "preemptions": stats["num_preemptions"],
                      "prefix_hit_tokens": stats["num_prefix_hit_tokens"]}}


def first_difference(arch: str, run: dict, expected: dict, reference: dict | None) -> dict:
    """How ``run`` differs: the exception it raised, or the first request whose tokens differ from
    ``expected`` and, given the all-reference engine's run, the first step that differs from its steps
    (or its statistics, when every step is the same)."""
    if "error" in run:
        return {"model": arch, **run["error"], "step": len(run["steps"]) + 1}
    request = next((r for r, tokens in sorted(expected.items()) if run["outputs"].get(r) != tokens), None)
    difference = {"model": arch, "request": request, "expected_tokens": expected.get(request),
                  "got_tokens": run["outputs"].get(request), "step": None, "same_tokens": request is None}
    if reference is None:
        return difference
    for number, (want, got) in enumerate(zip_longest(reference["steps"], run["steps"], fillvalue=[]), start=1):
        if want != got:
            want, got = dict(want), dict(got)
            request = min(r for r in set(want) | set(got) if want.get(r) != got.get(r))
            difference.update(step=number, request=request, expected=want.get(request), got=got.get(request))
            return difference
    difference.update(expected_stats=reference["stats"], got_stats=run["stats"])
    return difference


def run_engine(models: dict, expected: dict, objects: dict[str, Any], learner_files: set[str],
               reference: dict | None) -> dict:
    """Every model with ``objects`` at their paths: calls per path, and per model whether the outputs
    of the requests in ``expected[arch]`` equal it and, given ``reference`` (the all-reference engine's
    run), whether every step and the statistics equal its too: an exact part changes neither, so a part
    that schedules, preempts or caches differently is caught even when the tokens come out the same."""
    counts = {path: 0 for path in objects}
    result = {"counts": counts, "models": {}}
    with installed(objects, counts):
        for arch, model in models.items():
            run = run_model(model, learner_files)
            equal = "error" not in run and all(run["outputs"].get(r) == t for r, t in expected[arch].items())
            if equal and reference is not None:
                same = reference["models"][arch]
                equal = run["steps"] == same["steps"] and run["stats"] == same["stats"]
            result["models"][arch] = {
                "equal": equal, "steps": run["steps"], "outputs": run.get("outputs"), "stats": run.get("stats"),
                "difference": None if equal else first_difference(
                    arch, run, expected[arch], reference["models"][arch] if reference else None)}
    result["equal"] = all(m["equal"] for m in result["models"].values())
    return result


def first_model_difference(run: dict) -> dict | None:
    return next((m["difference"] for m in run["models"].values() if not m["equal"]), None)


# ----------------------------------------------------------------------------------------------
# Bisection


def bisect(suspects: list[int], fails: Callable[[frozenset], dict | None]) -> tuple[list[int], dict | None]:
    """Binary search for one exercise whose parts alone make the engine differ. Returns ([id], its
    difference), or (the smallest set found that differs only together, None)."""
    while len(suspects) > 1:
        half = len(suspects) // 2
        left, right = suspects[:half], suspects[half:]
        if fails(frozenset(left)):
            suspects = left
        elif fails(frozenset(right)):
            suspects = right
        else:
            return suspects, None
    return suspects, fails(frozenset(suspects))


# ----------------------------------------------------------------------------------------------
# The child


def main(result_file: str, memory_mb: str, spec_file: str) -> None:
    token = sandbox.child_prologue(int(memory_mb))
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    report: dict = {"stage": "setup", "parts": {}, "runs": 0}

    def save(stage: str) -> None:
        report["stage"] = stage
        sandbox.write_result(result_file, token, [report])

    import torch

    torch.set_num_threads(1)
    save("setup")
    reference_objects = {path: getattr(*owner_of(path)) for part in spec["parts"] for path in part["paths"]}
    learner: dict[int, dict[str, Any]] = {}
    for part in spec["parts"]:
        if not part.get("file"):
            continue
        entry = report["parts"][str(part["exercise"])] = {"loaded": False, "error": ""}
        try:
            module = load_learner_module(part["file"], part.get("sha256"), part["exercise"])
            missing = [p.rsplit(".", 1)[1] for p in part["paths"] if not hasattr(module, p.rsplit(".", 1)[1])]
            if missing:
                raise AttributeError(f"the file does not define {', '.join(missing)}")
            learner[part["exercise"]] = {p: getattr(module, p.rsplit(".", 1)[1]) for p in part["paths"]}
            entry["loaded"] = True
        except (Exception, SystemExit) as exc:   # noqa: BLE001 - reported; the reference stands in
            entry["error"] = describe_exception(exc, {part["file"]})
    learner_files = {p["file"] for p in spec["parts"] if p.get("file")}

    save("transformers")
    # In the folder the sandbox gave this child (its working directory): removed even after a kill.
    models = {arch: prepare_model(arch, os.getcwd()) for arch in ARCHS}
    expected = {arch: models[arch]["expected"] for arch in ARCHS}

    save("reference")
    reference = run_engine(models, expected, reference_objects, learner_files, None)
    report["runs"] += 1
    report["reference"] = reference
    report["reference_equal"] = reference["equal"]
    if not reference["equal"]:
        report.update(equal=False, difference=first_model_difference(reference), culprit=None)
        finish(report, save)
    # The sampled row has no transformers counterpart: the all-reference engine's tokens stand in.
    for arch in ARCHS:
        expected[arch][str(SAMPLED_ROW)] = reference["models"][arch]["outputs"][str(SAMPLED_ROW)]

    def assemble(ids: frozenset) -> dict:
        objects = dict(reference_objects)
        for exercise in ids:
            objects.update(learner[exercise])
        report["runs"] += 1
        return run_engine(models, expected, objects, learner_files, reference)

    save("assembled")
    mine = sorted(learner)
    assembled = assemble(frozenset(mine)) if mine else reference
    report["assembled"] = assembled
    report["equal"] = assembled["equal"]
    report["difference"] = first_model_difference(assembled)
    report["culprit"] = None
    if not assembled["equal"]:
        save("bisect")
        memo = {frozenset(mine): report["difference"]}

        def fails(ids: frozenset) -> dict | None:
            if ids not in memo:
                memo[ids] = first_model_difference(assemble(ids))
            return memo[ids]

        suspects, difference = bisect(mine, fails)
        report["culprit"] = {"exercises": suspects, "alone": difference is not None, "difference": difference}
    finish(report, save)


def finish(report: dict, save: Callable[[str], None]) -> None:
    """Write the final result (without the per-step tokens, which served the comparison) and exit."""
    for run in (report.get("reference"), report.get("assembled")):
        for model in (run or {}).get("models", {}).values():
            model.pop("steps", None)
    save("done")
    os._exit(0)   # leftover non-daemon threads must not keep the process alive


if __name__ == "__main__":
    main(*sys.argv[1:])
