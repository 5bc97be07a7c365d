"""The run behind ``python practice/judge.py engine``, inside its isolated child process.

``python -m judging.engine_run RESULT_FILE MEMORY_MB SPEC_FILE`` is started by sandbox.run_child
(engine_parts.py decides what goes in SPEC_FILE); it is not meant to be run by hand. The spec names
every engine part an exercise declares and, where the learner's version is to be used, the workspace
file and the sha256 of the content that was judged, and the chapters whose runs to make (null: all)::

    {"parts": [{"exercise": 194, "chapter": 2, "paths": ["mini_platform.ops.cpu.layernorm.rms_norm", ...],
                "file": "/.../workspace/194_rms_norm.py" or null, "sha256": "..." or null}],
     "chapters": [6] or null, "cache": "/path/to/the/cache" or null}

Checkpoints, transformers' tokens and every engine run are cached by content (engine_cache.py): a run whose
inputs (the package source, the run, the learner's files in play) are unchanged is read back, not run.

The standard load is RUNS: tiny checkpoints (a Llama, a Mixtral, a Qwen2-MoE, written with fixed seeds
to a temporary folder by mini_platform.model.tiny), each engine given five requests through
``LLMEngine.add_request`` / ``step`` in fp32: few KV blocks (preemption), a small token budget per step
(chunked prefill), prompts sharing a prefix (prefix caching), a stop token and one seeded sampled
request. The engines differ in where the parts run: the cpu kernels in one process (and once with
whole prompts), the Triton kernels in the Triton interpreter, the npu kernels against the emulated
torch_npu (both MoE call sequences, decode in ACL graphs), decode in CPU graphs, and two tensor-parallel
worker processes over gloo, with and without expert parallelism. The greedy rows must equal
transformers' greedy generation; the sampled row, every step's tokens and the statistics must equal the
all-reference engine's (transformers samples differently, and an exact part changes no step).
The platform is resolved afresh for every engine built, so platform-layer parts run too.

The learner's files are only read: each is compiled from its bytes under its own path (tracebacks
name the learner's file and line) and executed into a fresh module. Every declared part, learner's
or reference, is wrapped to count its calls (a class counts its instances, a Triton kernel its
launches) and put at its dotted path with ``setattr``; everything is restored after each run. In the
worker processes the same happens through a general plugin (``install_in_worker``), and their counts
are added to the driver's. When the assembled engine differs from the expected tokens (or raises), a
binary search over the learner's exercises, re-running only the engines that differed, finds the one
that breaks it alone, with the first engine step whose tokens differ from the all-reference engine's.

The result (rewritten after each stage, so that a crash or a time-out still tells how far it got)::

    {"stage": "done", "parts": {id: {"loaded": bool, "error": str}}, "reference": RUN, "assembled": RUN,
     "equal": bool, "reference_equal": bool, "difference": DIFF or null, "culprit": {...} or null,
     "runs": int, "run_names": [name, ...], "cached_runs": int}

RUN = {"counts": {path: calls}, "models": {name: {"equal", "difference", "stats", "steps", "called", "cached"}}}
(``called``: the paths called in that run; ``cached``: read from the cache);
DIFF = {"model", "step", "request", "expected", "got", "same_tokens"} or {"model", "exception", "where"}
(``same_tokens`` with ``expected_stats``/``got_stats`` when only the statistics differ).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
import random
import re
import sys
import traceback
import types
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Iterator

from . import engine_cache, sandbox

SEEDS = {"llama": 0, "mixtral": 1, "qwen2_moe": 2, "deepseek_v3": 3}
VOCAB = 257                      # mini_platform.model.tiny's vocabulary
MAX_TOKENS = 8
MAX_STEPS = 400                  # an engine that has not finished by then is not making progress
ENGINE_OPTIONS = {"block_size": 4, "num_kv_blocks": 14, "max_num_seqs": 8, "max_num_batched_tokens": 16,
                  "enable_prefix_caching": True, "enable_chunked_prefill": True, "dtype": "float32",
                  "backend": "cpu", "device": "cpu", "enforce_eager": True}
# Whole prompts (no chunked prefill, so a long prompt at the head of the queue holds the others back), three
# requests at a time, blocks of 8 and a context of 24 tokens (the longer prompts finish by length): other
# kernel shapes, rules the first run never uses, preemption again.
WHOLE_PROMPTS = {"block_size": 8, "num_kv_blocks": 5, "max_num_seqs": 3, "max_num_batched_tokens": 24,
                 "enable_chunked_prefill": False, "max_model_len": 24}
# The npu kernels take blocks of 16 tokens or more (as _npu_paged_attention does); 5 of them still preempt.
NPU_OPTIONS = {"backend": "npu", "block_size": 16, "num_kv_blocks": 5, "emulated_npu": True}
STOP_ROW, SAMPLED_ROW = 2, 3     # the request with a stop token; the seeded sampled one
WORKER_SPEC = "MINI_JUDGE_WORKER_PARTS"   # the spec file the TP workers' general plugin reads (install_in_worker)


@dataclass(frozen=True)
class Run:
    """One engine of the standard load: a checkpoint, the engine options, and where it runs. ``chapters``
    are the chapters whose parts this run is there to call (``--chapter N`` runs only those)."""
    name: str
    checkpoint: str
    options: dict
    chapters: frozenset
    emulated_npu: bool = False               # inside mini_platform.ascend.emulation.emulated_torch_npu()
    env: tuple = ()                          # (name, value) pairs set while the engine is built and runs

    @property
    def multiprocess(self) -> bool:
        return self.options.get("tensor_parallel_size", 1) > 1


def _run(name: str, checkpoint: str, chapters: set, **changes) -> Run:
    emulated, env = changes.pop("emulated_npu", False), changes.pop("env", ())
    return Run(name, checkpoint, {**ENGINE_OPTIONS, **changes}, frozenset(chapters), emulated, env)


# Every part is called on its real path: the cpu kernels in one process, the Triton kernels in the Triton
# interpreter, the Ascend calls against the emulated torch_npu (both MoE call sequences, an ACL graph),
# the CPU graph, and two worker processes over gloo with and without expert parallelism.
RUNS = (
    _run("llama", "llama", {1, 2, 3, 4, 5}),
    _run("mixtral", "mixtral", {1, 2, 3, 4, 5, 6}),
    _run("llama/b8", "llama", {1, 2, 3, 4, 5}, **WHOLE_PROMPTS),
    _run("mixtral/triton", "mixtral", {2, 6}, backend="triton"),
    _run("qwen2_moe/npu-graph", "qwen2_moe", {6, 7}, enforce_eager=False, **NPU_OPTIONS),
    # moe_comm="auto": the engine asks vllm-ascend's per-step rule (exercise 259) every step and counts its answer.
    _run("mixtral/npu-v1", "mixtral", {6, 8}, env=(("MINI_PLATFORM_NPU_MOE_ROUTING", "v1"),), moe_comm="auto",
         **NPU_OPTIONS),
    _run("llama/graph", "llama", {7}, enforce_eager=False),
    _run("llama/piecewise", "llama", {7}, enforce_eager=False,
         compilation_config={"cudagraph_mode": "FULL_AND_PIECEWISE"}),
    _run("llama/tp2", "llama", {8}, tensor_parallel_size=2),
    _run("mixtral/tp2-ep", "mixtral", {6, 8}, tensor_parallel_size=2, enable_expert_parallel=True),
    _run("deepseek_v3", "deepseek_v3", {10}),
    _run("deepseek_v3/npu", "deepseek_v3", {10}, **NPU_OPTIONS),
)


def runs_for(chapters: set[int] | None) -> tuple[Run, ...]:
    """The runs that serve ``chapters`` (all of them for None)."""
    return tuple(r for r in RUNS if chapters is None or r.chapters & set(chapters))


def standard_prompts() -> list[list[int]]:
    """Five prompts of different lengths; four share a 9-token prefix (two full blocks of 4)."""
    rng = random.Random(0)

    def draw(n: int) -> list[int]:
        return [rng.randrange(3, VOCAB) for _ in range(n)]

    prefix = draw(9)
    return [prefix + draw(3), prefix + draw(11), draw(5), prefix + draw(6), prefix + draw(1)]


# ----------------------------------------------------------------------------------------------
# Checkpoints and what transformers generates


def prepare_model(arch: str, folder: str, cache: engine_cache.Cache | None = None) -> dict:
    """Write the tiny checkpoint (or find it in ``cache``); return its path, its cache key, the requests
    and the greedy tokens transformers generates for the greedy rows (the stop row cut after its stop token)."""
    import mini_platform.model
    from mini_platform import SamplingParams

    prompts = standard_prompts()
    key = engine_cache.digest("checkpoint", arch, SEEDS[arch], prompts, MAX_TOKENS, SAMPLED_ROW,
                              engine_cache.tree_digest(Path(mini_platform.model.__file__).parent),
                              engine_cache.versions())
    cache = cache or engine_cache.Cache(None)
    path = cache.checkpoint(key)
    if path is not None:
        generated = json.loads((path / "generated.json").read_text(encoding="utf-8"))
    else:
        built, generated = _generate(arch, prompts, Path(folder))
        path = cache.store_checkpoint(key, built, generated)
    rows, expected = [], {}
    for i, prompt in enumerate(prompts):
        if i == SAMPLED_ROW:
            rows.append((prompt, SamplingParams(temperature=0.8, top_k=40, top_p=0.9, max_tokens=MAX_TOKENS,
                                                seed=1234, ignore_eos=True)))
            continue
        tokens, stop = generated[str(i)], []
        if i == STOP_ROW:
            stop = [tokens[2]]
            tokens = tokens[:tokens.index(stop[0]) + 1]
        rows.append((prompt, SamplingParams(temperature=0, max_tokens=MAX_TOKENS, stop_token_ids=stop,
                                            ignore_eos=True)))
        expected[str(i)] = tokens
    return {"path": str(path), "key": key, "rows": rows, "expected": expected}


def _generate(arch: str, prompts: list[list[int]], folder: Path) -> tuple[Path, dict[str, list[int]]]:
    """The tiny checkpoint written under ``folder`` and transformers' greedy tokens for every greedy row."""
    import torch
    import transformers
    from mini_platform.model import make_tiny_checkpoint

    transformers.utils.logging.disable_progress_bar()
    path = make_tiny_checkpoint(folder / arch, arch=arch, seed=SEEDS[arch])
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path), attn_implementation="eager").eval()
    model.generation_config.eos_token_id = None        # else generate fills in the config's EOS
    config = transformers.GenerationConfig(max_new_tokens=MAX_TOKENS, do_sample=False, eos_token_id=None,
                                           pad_token_id=0)
    generated = {}
    for i, prompt in enumerate(prompts):
        if i == SAMPLED_ROW:
            continue
        ids = torch.tensor([prompt])
        with torch.no_grad():
            tokens = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=config)
        generated[str(i)] = tokens[0, len(prompt):].tolist()
    return Path(path), generated


def prepare_runs(runs: tuple[Run, ...], folder: str, cache: engine_cache.Cache | None = None) -> dict[str, dict]:
    """Each run's model entry: its checkpoint's path and requests, its options, and the greedy tokens
    transformers generates (computed once per checkpoint, or read from ``cache``), cut where the run's
    context ends."""
    checkpoints = {arch: prepare_model(arch, folder, cache) for arch in dict.fromkeys(r.checkpoint for r in runs)}
    models = {}
    for run in runs:
        base = checkpoints[run.checkpoint]
        room = run.options.get("max_model_len")
        expected = {row: tokens if room is None else tokens[:room - len(base["rows"][int(row)][0])]
                    for row, tokens in base["expected"].items()}
        models[run.name] = {**base, "expected": expected, "options": run.options, "run": run}
    return models


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


class CountedKernel:
    """A ``@triton.jit`` kernel that counts its launches (``kernel[grid](...)``); anything else is the kernel's."""

    def __init__(self, kernel: Any, count: Callable[[], None]) -> None:
        self.kernel, self.count = kernel, count

    def __getitem__(self, grid: Any) -> Any:
        self.count()
        return self.kernel[grid]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)


def counted(obj: Any, count: Callable[[], None]) -> tuple[Any, Callable[[], None]]:
    """``obj`` counting its calls (a class: its instances; a Triton kernel: its launches), and how to undo that."""
    if not isinstance(obj, type) and hasattr(obj, "fn") and callable(getattr(obj, "__getitem__", None)):
        return CountedKernel(obj, count), lambda: None
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
    """Put ``objects[path]`` (counted into ``counts[path]``) at every path; restore all afterwards. A learner's
    function is also counted where its own module calls it by name (a wrapper calling its own kernel)."""
    from mini_platform import platforms

    undo: list[Callable[[], None]] = []
    try:
        for path, obj in objects.items():
            owner, name = owner_of(path)
            wrapped, unwrap = counted(obj, functools.partial(_bump, counts, path))
            undo += [unwrap, functools.partial(setattr, owner, name, getattr(owner, name))]
            setattr(owner, name, wrapped)
            home = getattr(getattr(obj, "fn", obj), "__globals__", None)   # the module the function was written in
            if home is not None and home is not vars(owner) and home.get(name) is obj:
                undo.append(functools.partial(home.__setitem__, name, obj))
                home[name] = wrapped
        platforms.clear_current_platform()   # resolve the platform afresh, through the parts in play
        yield
    finally:
        for restore in reversed(undo):
            restore()
        platforms.clear_current_platform()


def _bump(counts: dict[str, int], path: str) -> None:
    # Not while torch.compile traces the model (a piecewise run): a count there would be a side effect TorchDynamo
    # guards on, tracing the model again at every call. The compiled graph then runs the kernel without Python.
    torch = sys.modules.get("torch")
    if torch is not None and torch.compiler.is_dynamo_compiling():
        return
    counts[path] += 1


# ----------------------------------------------------------------------------------------------
# One engine run and its comparison


def describe_exception(exc: BaseException, learner_files: set[str]) -> dict:
    """``{"exception": "Type: message", "where": "file:line in function"}``, the frame in a learner's
    file when there is one (innermost; a worker's traceback, which arrives as text, is searched too),
    else the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if f.filename in learner_files]
    frame = (mine or frames or [None])[-1]
    where = f"{frame.filename}:{frame.lineno} in {frame.name}" if frame else ""
    text = f"{type(exc).__name__}: {exc}".strip()
    in_worker = [m for m in re.finditer(r'File "([^"]+)", line (\d+), in (\S+)', str(exc)) if m.group(1) in learner_files]
    if not mine and in_worker:
        where = "{}:{} in {}".format(*in_worker[-1].groups())
    return {"exception": text[:1000], "where": where, "in_learner_file": bool(mine or in_worker)}


@contextlib.contextmanager
def environment(run: Run) -> Iterator[None]:
    """The run's environment variables set and, for an npu run, the emulated torch_npu installed (a fresh
    one per run, as a new process would have); all restored afterwards."""
    saved = {name: os.environ.get(name) for name, _ in run.env}
    os.environ.update(dict(run.env))
    try:
        if run.emulated_npu:
            from mini_platform.ascend.emulation import emulated_torch_npu

            with emulated_torch_npu():
                yield
        else:
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# ----------------------------------------------------------------------------------------------
# Parts inside the tensor-parallel workers


def write_plugin_site(folder: Path) -> Path:
    """A folder that, on ``sys.path``, makes :func:`install_in_worker` a general plugin
    (``mini_platform.general_plugins``, the entry-point group every worker process loads, as vLLM's workers
    load theirs). Spawned workers inherit the driver's ``sys.path``."""
    info = folder / "mini_judge_parts-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mini-judge-parts\nVersion: 0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[mini_platform.general_plugins]\n"
                                           f"judge_parts = {__spec__.name}:install_in_worker\n",
                                           encoding="utf-8")
    return folder


_worker_parts: contextlib.AbstractContextManager | None = None


def install_in_worker() -> None:
    """In a worker process: put the parts the spec (``$MINI_JUDGE_WORKER_PARTS``) names at their paths,
    the learner's where given and the engine's otherwise, all counted; the counts are written to the spec's
    folder when the process exits. Does nothing in the driver and outside a judge run."""
    spec_file = os.environ.get(WORKER_SPEC)
    if not spec_file:
        return
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    if spec["driver"] == os.getpid():
        return
    objects = {path: getattr(*owner_of(path)) for path in spec["paths"]}
    for part in spec["learner"]:
        module = load_learner_module(part["file"], part["sha256"], part["exercise"])
        objects.update({path: getattr(module, path.rsplit(".", 1)[1]) for path in part["paths"]})
    counts = {path: 0 for path in objects}
    global _worker_parts   # held for the life of the process: a dropped context manager would restore at once
    _worker_parts = installed(objects, counts)
    _worker_parts.__enter__()
    out = Path(spec["counts"]) / f"{os.getpid()}.json"
    import multiprocessing.util

    def write_counts() -> None:   # whole or not at all: a worker stopped mid-write must not leave the driver half a file
        partial = out.with_suffix(".partial")
        partial.write_text(json.dumps(counts), encoding="utf-8")
        os.replace(partial, out)

    multiprocessing.util.Finalize(None, write_counts, exitpriority=10)


@contextlib.contextmanager
def worker_parts(run: Run, objects: dict[str, Any], learner: list[dict], counts: dict[str, int]) -> Iterator[None]:
    """For a multi-process run: the spec the workers' plugin reads, set in the environment they inherit;
    afterwards (the workers gone) their counts are added to ``counts``."""
    if not run.multiprocess:
        yield
        return
    folder = Path(os.getcwd()) / "worker_parts"
    counts_dir = folder / "counts"
    counts_dir.mkdir(parents=True, exist_ok=True)
    for stale in counts_dir.iterdir():   # a previous run's counts, whole (.json) or cut off (.partial)
        stale.unlink()
    spec = folder / "spec.json"
    spec.write_text(json.dumps({"driver": os.getpid(), "paths": sorted(objects), "learner": learner,
                                "counts": str(counts_dir)}), encoding="utf-8")
    os.environ[WORKER_SPEC] = str(spec)
    try:
        yield
    finally:
        os.environ.pop(WORKER_SPEC, None)
        for file in counts_dir.glob("*.json"):
            for path, calls in json.loads(file.read_text(encoding="utf-8")).items():
                counts[path] = counts.get(path, 0) + calls


# ----------------------------------------------------------------------------------------------
# One engine run and its comparison


def run_model(model: dict, learner_files: set[str]) -> dict:
    """Run the standard requests on one engine: the tokens of each step, the finished outputs,
    the engine's statistics; or the exception that stopped it."""
    import torch
    from mini_platform import LLMEngine

    torch.manual_seed(0)
    steps: list[list] = []
    engine = None
    try:
        engine = LLMEngine(model["path"], **model["options"])
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
    finally:
        if engine is not None:
            engine.close()   # a tensor-parallel engine's workers exit (and write their counts)
    return {"steps": steps, "outputs": outputs,
            "stats": {"steps": len(steps), "preemptions": stats["num_preemptions"],
                      "prefix_hit_tokens": stats["num_prefix_hit_tokens"],
                      "graph_steps": stats.get("num_graph_steps", 0)}}


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


def run_engine(models: dict, expected: dict, reference_objects: dict[str, Any], learner_files: set[str],
               reference: dict | None, learner: dict[int, dict] | None = None,
               progress: Callable[[str], None] = lambda name: None,
               cache: engine_cache.Cache | None = None, base_key: str = "") -> dict:
    """Every model (from :func:`prepare_runs`) with the engine's parts ``reference_objects`` at their paths,
    except that the learner's parts (``learner``: exercise -> {"chapter", "objects": {path: obj}, "file",
    "sha256", "paths"}) stand in for them in the runs that serve their chapter (``Run.chapters``: a chapter-4
    kernel need not be capturable in a graph before chapter 7 says so), in the workers too. Returns the calls
    per path, and per model whether the outputs of the requests in ``expected[name]`` equal it and, given
    ``reference`` (the all-reference engine's run), whether every step and the statistics equal its too: an
    exact part changes neither, so a part that schedules, preempts or caches differently is caught even when
    the tokens come out the same. A run whose key (``base_key``, the run, the learner's files in play) is in
    ``cache`` is read from it instead of run (``"cached": True``)."""
    cache = cache or engine_cache.Cache(None)
    counts = {path: 0 for path in reference_objects}
    result = {"counts": counts, "models": {}}
    for name, model in models.items():
        run = model["run"]
        mine = [part for part in (learner or {}).values() if part["chapter"] in run.chapters]
        files = [{key: part[key] for key in ("exercise", "file", "sha256", "paths")} for part in mine]
        # Only the parts the all-reference engine called in this run can change it: the others are not in the key.
        called = set(reference["models"][name]["called"]) if reference is not None else set()
        key = engine_cache.digest("run", base_key, model["key"], run.name, run.options, sorted(run.chapters),
                                  run.emulated_npu, run.env, [(f["exercise"], f["paths"], f["sha256"]) for f in files
                                                              if called & set(f["paths"])])
        placeholders = {str(f["exercise"]): f["file"] for f in files}
        outcome = cache.run(key, placeholders)
        cached = outcome is not None
        if not cached:
            progress(name)
            objects = dict(reference_objects)
            for part in mine:
                objects.update(part["objects"])
            before = dict(counts)
            with installed(objects, counts), environment(run), worker_parts(run, objects, files, counts):
                outcome = run_model(model, learner_files)
            outcome["calls"] = {path: counts[path] - before[path] for path in counts if counts[path] > before[path]}
            if "error" not in outcome:   # a failure is run again next time (it may be the machine's, not the code's)
                cache.store_run(key, outcome, placeholders)
        else:
            progress(f"{name} (cached)")
            for path, calls in outcome["calls"].items():
                counts[path] = counts.get(path, 0) + calls
        equal = "error" not in outcome and all(outcome["outputs"].get(r) == t for r, t in expected[name].items())
        if equal and reference is not None:
            same = reference["models"][name]
            equal = outcome["steps"] == same["steps"] and outcome["stats"] == same["stats"]
        result["models"][name] = {
            "equal": equal, "steps": outcome["steps"], "outputs": outcome.get("outputs"),
            "stats": outcome.get("stats"), "called": sorted(outcome["calls"]), "cached": cached,
            "difference": None if equal else first_difference(
                name, outcome, expected[name], reference["models"][name] if reference else None)}
    result["equal"] = all(m["equal"] for m in result["models"].values())
    return result


def first_model_difference(run: dict) -> dict | None:
    return next((m["difference"] for m in run["models"].values() if not m["equal"]), None)


def source_key(paths: list[str]) -> str:
    """What every run's result depends on besides the run itself: the source of the mini_platform package and
    of this module, the versions, the counted part paths, and the environment variables the engine reads."""
    import mini_platform

    environment = sorted((k, v) for k, v in os.environ.items() if k.startswith(("MINI_PLATFORM_", "TRITON_"))
                         and k not in ("MINI_PLATFORM_PRACTICE_DIR", "MINI_PLATFORM_LANG", "MINI_PLATFORM_JUDGE_CACHE",
                                                 sandbox.RUN_MARKER))
    return engine_cache.digest(engine_cache.tree_digest(Path(mini_platform.__file__).parent),
                               hashlib.sha256(Path(__file__).read_bytes()).hexdigest(), engine_cache.versions(),
                               paths, environment, MAX_STEPS)


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
            learner[part["exercise"]] = {**part, "objects": {p: getattr(module, p.rsplit(".", 1)[1]) for p in part["paths"]}}
            entry["loaded"] = True
        except (Exception, SystemExit) as exc:   # noqa: BLE001 - reported; the reference stands in
            entry["error"] = describe_exception(exc, {part["file"]})
    learner_files = {p["file"] for p in spec["parts"] if p.get("file")}

    runs = runs_for(spec.get("chapters"))
    report["run_names"] = [run.name for run in runs]
    save("transformers")
    # In the folder the sandbox gave this child (its working directory): removed even after a kill.
    sys.path.insert(0, str(write_plugin_site(Path(os.getcwd()) / "plugin_site")))
    cache = engine_cache.Cache(spec.get("cache"))
    models = prepare_runs(runs, os.getcwd(), cache)
    expected = {name: dict(model["expected"]) for name, model in models.items()}
    base_key = source_key(sorted(reference_objects))

    def stage_progress(stage: str) -> Callable[[str], None]:
        return lambda name: sandbox.progress(f"{stage} {name}")

    def engines(*args, **kwargs) -> dict:
        found = run_engine(*args, **kwargs, cache=cache, base_key=base_key)
        report["cached_runs"] = report.get("cached_runs", 0) + sum(m["cached"] for m in found["models"].values())
        return found

    save("reference")
    reference = engines(models, expected, reference_objects, learner_files, None, progress=stage_progress("reference"))
    report["runs"] += 1
    report["reference"] = reference
    report["reference_equal"] = reference["equal"]
    if not reference["equal"]:
        report.update(equal=False, difference=first_model_difference(reference), culprit=None)
        finish(report, save)
    # The sampled row has no transformers counterpart: the all-reference engine's tokens stand in.
    for name in models:
        expected[name][str(SAMPLED_ROW)] = reference["models"][name]["outputs"][str(SAMPLED_ROW)]

    def assemble(ids: frozenset, names: list[str], stage: str) -> dict:
        """The runs ``names`` with the parts ``ids`` swapped in. A run that calls none of them (it does not
        serve their chapter, or the all-reference engine never called them there) takes the same path as
        the all-reference engine until one is called, so never: its result is taken from that engine's."""
        report["runs"] += 1

        def touches(name: str) -> bool:
            called = set(reference["models"][name]["called"])
            return any(learner[i]["chapter"] in models[name]["run"].chapters and called & set(learner[i]["paths"])
                       for i in ids)

        touched = [name for name in names if touches(name)]
        run = engines({name: models[name] for name in touched}, expected, reference_objects, learner_files,
                      reference, {i: learner[i] for i in sorted(ids)}, stage_progress(stage))
        run["models"] = {name: run["models"].get(name) or {**reference["models"][name], "difference": None}
                         for name in names}
        return run

    save("assembled")
    mine = sorted(learner)
    assembled = assemble(frozenset(mine), list(models), "assembled") if mine else reference
    report["assembled"] = assembled
    report["equal"] = assembled["equal"]
    report["difference"] = first_model_difference(assembled)
    report["culprit"] = None
    if not assembled["equal"]:
        save("bisect")
        # Only the runs that differed are run again, the first of them first: it names the culprit; the
        # suspects are the learner's parts that those runs swap in.
        failing = [name for name, model in assembled["models"].items() if not model["equal"]]
        chapters = set().union(*(models[name]["run"].chapters for name in failing))
        mine = [i for i in mine if learner[i]["chapter"] in chapters]
        memo = {frozenset(mine): report["difference"]}   # the parts left out change none of those runs

        def fails(ids: frozenset) -> dict | None:
            if ids not in memo:
                memo[ids] = first_model_difference(assemble(ids, failing, "bisect"))
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
