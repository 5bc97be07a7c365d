"""The Triton kernels compiled ahead of time for real GPUs, on a machine that has none.

The Triton interpreter (``TRITON_INTERPRET=1``, how every kernel runs on a CPU here) accepts code the
compiler rejects (a ``tl.arange`` whose size is not a power of two, a ``tl.dot`` tile under 16) and
never meets what only the compiler sees: registers, spills, shared memory. This module closes the gap
in two processes, because a kernel the interpreter has patched will not compile in the same process:

1. :func:`record_launches`, interpreter on: every launch of the ``@triton.jit`` kernels of the given
   modules is recorded as the JIT would specialise it for a GPU (Triton's own ``native_specialize_impl``:
   argument types, 16-byte divisibility, integers equal to 1 as constants), with its constexprs and
   launch options (``num_warps``, ``num_stages``).
2. :func:`compile_in_subprocess`, interpreter off, in a fresh process with its own Triton cache: each
   launch goes through ``triton.compile`` for ``sm_80``, ``sm_90`` and ``gfx942``. NVIDIA registers and
   spills come from the wheel's own ``ptxas -v``, AMD's from the ``amdgcn`` assembly's metadata, shared
   memory from the compiled kernel's metadata.

:func:`occupancy` turns registers, shared memory and warps into resident warps per SM (:data:`SM_LIMITS`).
Nothing here runs a kernel; the engine never imports this module (it is the check, not the hot path).

Where the interpreter and Triton 3.7.1's compiler disagree, the kernels follow the compiler
(tests/test_triton_compile.py checks each): ``tl.dot`` needs K >= 16 on NVIDIA, the interpreter computes
less (attention pads HEAD_DIM to 16); fp32 dots default to TF32 on sm_80/sm_90, the interpreter computes
full fp32 (the fp32 dots pass ``input_precision="ieee"``, and their PTX has no tensor-core instruction);
bf16 arithmetic is right compiled and wrong interpreted (every kernel computes in fp32; only the MoE GEMM
feeds bf16 to ``tl.dot``, and only when compiled); a masked ``tl.load`` without ``other`` is undefined
in the masked lanes when compiled (such loads are stored under the same mask). Both reject a ``tl.arange``
whose size is not a power of two.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

# name -> (backend, arch, warp size) of triton.backends.compiler.GPUTarget
TARGETS = {"sm_80": ("cuda", 80, 32), "sm_90": ("cuda", 90, 32), "gfx942": ("hip", "gfx942", 64)}


@dataclass(frozen=True)
class SmLimits:
    """Per-SM limits that bound occupancy, the same for compute capability 8.0 (A100) and 9.0 (H100/H200) but
    shared memory. Sources: the NVIDIA CUDA C++ Programming Guide, table "Technical Specifications per Compute
    Capability" (64 resident warps = 2048 threads, 32 resident blocks, 64K 32-bit registers per SM, at most 255
    per thread); the tuning guides, section "Streaming Multiprocessor" (docs.nvidia.com/cuda/ampere-tuning-guide:
    164 KB of shared memory per SM on A100; docs.nvidia.com/cuda/hopper-tuning-guide: 228 KB on H100; both: 1 KB
    of it reserved per block for the system); the CUDA occupancy calculator (registers are allocated per warp
    in units of 256, shared memory in units of 128 bytes)."""
    gpu: str
    shared_per_sm: int
    max_warps: int = 64
    max_blocks: int = 32
    registers: int = 65536
    register_unit: int = 256
    shared_unit: int = 128
    shared_reserved_per_block: int = 1024


SM_LIMITS = {"sm_80": SmLimits("A100", 164 * 1024), "sm_90": SmLimits("H100/H200", 228 * 1024)}


def occupancy(target: str, regs: int, shared: int, num_warps: int) -> dict[str, Any]:
    """Resident blocks and warps per SM for a kernel using ``regs`` registers per thread and ``shared``
    bytes per block, launched with ``num_warps``; ``limit`` names what binds first."""
    sm = SM_LIMITS[target]
    regs_per_warp = math.ceil(regs * 32 / sm.register_unit) * sm.register_unit
    smem = math.ceil((shared + sm.shared_reserved_per_block) / sm.shared_unit) * sm.shared_unit
    bounds = {"blocks": sm.max_blocks, "warps": sm.max_warps // num_warps,
              "registers": (sm.registers // regs_per_warp) // num_warps if regs else sm.max_blocks,
              "shared": sm.shared_per_sm // smem}
    limit = min(bounds, key=bounds.get)
    blocks = bounds[limit]
    return {"blocks": blocks, "warps": blocks * num_warps, "fraction": blocks * num_warps / sm.max_warps,
            "limit": limit, "gpu": sm.gpu}


@dataclass(frozen=True)
class Launch:
    """One distinct launch: the kernel (``source``: a module name or a ``.py`` path; ``kernel``: its
    attribute), each parameter as ``(name, type, key)`` (type ``"constexpr"``: key is the value; else the
    JIT's specialisation key, ``"D"`` = divisible by 16) and the launch options given."""
    source: str
    kernel: str
    params: tuple[tuple[str, str, Any], ...]
    options: tuple[tuple[str, Any], ...] = ()

    def constexprs(self) -> dict[str, Any]:
        return {name: key for name, kind, key in self.params if kind == "constexpr"}

    def dtypes(self) -> str:
        """The pointer element types, first seen first (``"fp32"``, ``"bf16/fp32"``)."""
        seen = [kind[1:] for _, kind, _ in self.params if kind.startswith("*") and kind[1:] not in ("i32", "i64")]
        return "/".join(dict.fromkeys(seen)) or "-"

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "kernel": self.kernel, "params": [list(p) for p in self.params],
                "options": [list(o) for o in self.options]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Launch":
        return cls(data["source"], data["kernel"], tuple(tuple(p) for p in data["params"]),
                   tuple(tuple(o) for o in data["options"]))


_LOADED: dict[str, Any] = {}


def load_source(source: str):
    """The module named ``source``, or the file at path ``source`` (an exercise's solution.py) loaded once."""
    if not source.endswith(".py"):
        return importlib.import_module(source)
    path = str(Path(source).resolve())
    if path not in _LOADED:
        spec = importlib.util.spec_from_file_location(f"_aot_{len(_LOADED)}_{Path(path).stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[path] = module
    return _LOADED[path]


def _is_constexpr(parameter: inspect.Parameter) -> bool:
    return "constexpr" in str(parameter.annotation)   # a string under `from __future__ import annotations`


def jit_kernels(module) -> Iterator[tuple[str, Any]]:
    """The launchable @triton.jit kernels defined in ``module`` (interpreted: they have ``run``)."""
    for name, obj in vars(module).items():
        fn = getattr(obj, "fn", None)
        if callable(getattr(obj, "run", None)) and inspect.isfunction(fn) and fn.__module__ == module.__name__:
            yield name, obj


def _specialize(value: Any) -> tuple[str, Any]:
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    kind, key = native_specialize_impl(BaseBackend, value, False, True, True)[:2]
    return kind, (value if kind == "constexpr" else key)


def _describe(source: str, name: str, signature: inspect.Signature, args: tuple, kwargs: dict) -> Launch:
    bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in signature.parameters})
    bound.apply_defaults()
    params = tuple((p, "constexpr", bound.arguments[p]) if _is_constexpr(signature.parameters[p])
                   else (p, *_specialize(bound.arguments[p])) for p in signature.parameters)
    options = tuple(sorted((k, v) for k, v in kwargs.items() if k not in signature.parameters))
    return Launch(source, name, params, options)


def launch_of(source: str, kernel: str, *args: Any, **kwargs: Any) -> Launch:
    """The launch ``kernel[grid](*args, **kwargs)`` would make (CPU or GPU tensors), without making it:
    the way to compile a kernel of your own (``source``: its module name or file path)."""
    fn = getattr(load_source(source), kernel)
    return _describe(source, kernel, inspect.signature(fn.fn), args, kwargs)


@contextlib.contextmanager
def record_launches(sources: Iterable[str]) -> Iterator[list[Launch]]:
    """Record (and still run) every launch of the kernels of ``sources`` made inside the block; the list
    yielded holds each distinct launch once, in first-seen order. Needs the interpreter on."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("record_launches wraps interpreted kernels: set TRITON_INTERPRET=1 before the kernels "
                           "are imported (tests/conftest.py does); compile in a process without it")
    launches: list[Launch] = []
    patched = []

    def wrap(source: str, name: str, kernel: Any):
        signature = inspect.signature(kernel.fn)
        run = kernel.run

        def recording_run(*args, grid, warmup, **kwargs):
            launch = _describe(source, name, signature, args, kwargs)
            if launch not in launches:
                launches.append(launch)
            return run(*args, grid=grid, warmup=warmup, **kwargs)

        kernel.run = recording_run        # launches go through kernel[grid](...) -> kernel.run
        patched.append(kernel)

    for source in sources:
        for name, kernel in jit_kernels(load_source(source)):
            wrap(source, name, kernel)
    try:
        yield launches
    finally:
        for kernel in patched:
            del kernel.run


def _ptxas_usage(ptx: str) -> dict[str, int]:
    """Registers per thread and spill-store bytes from the Triton wheel's own ``ptxas -v``."""
    from triton.backends.nvidia import __file__ as nvidia_backend

    ptxas = Path(nvidia_backend).parent / "bin" / "ptxas"
    arch = re.search(r"^\.target\s+(\w+)", ptx, re.M).group(1)   # sm_90a for the 90 target
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        out = subprocess.run([str(ptxas), "-v", f"--gpu-name={arch}", f.name, "-o", os.devnull],
                             capture_output=True, text=True, check=True).stderr
    return {"regs": int(re.search(r"Used (\d+) registers", out).group(1)),
            "spills": int(re.search(r"(\d+) bytes spill stores", out).group(1))}


def _amdgcn_usage(asm: str) -> dict[str, int]:
    """VGPRs, VGPR spills and the compiler's own occupancy (waves per SIMD) from the amdgcn assembly."""
    field = lambda pattern: int(re.search(pattern, asm).group(1))  # noqa: E731
    return {"regs": field(r"; NumVgprs: (\d+)"), "spills": field(r"\.vgpr_spill_count:\s+(\d+)"),
            "waves_per_simd": field(r"; Occupancy: (\d+)")}


def compile_launch(launch: Launch, target: str, keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """Compile ``launch`` for ``target`` (a :data:`TARGETS` name) in this process, which must not run the
    interpreter. Returns regs, spills, shared, num_warps (and for NVIDIA the occupancy per :data:`SM_LIMITS`)
    and the assembly named in ``keep`` that the target has (``"ptx"``, ``"amdgcn"``); a compile error is
    returned as ``error``."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    if os.environ.get("TRITON_INTERPRET") == "1":
        raise RuntimeError("compile_launch needs a process without TRITON_INTERPRET=1 (use compile_in_subprocess)")
    gpu_target = GPUTarget(*TARGETS[target])
    backend = make_backend(gpu_target)
    fn = getattr(load_source(launch.source), launch.kernel)
    signature = {name: kind for name, kind, _ in launch.params}
    attrs = {(i,): backend.parse_attr(key) for i, (_, kind, key) in enumerate(launch.params)
             if kind != "constexpr" and isinstance(key, str)}
    try:
        compiled = triton.compile(ASTSource(fn, signature, launch.constexprs(), attrs), target=gpu_target,
                                  options=dict(launch.options))
        usage = _amdgcn_usage(compiled.asm["amdgcn"]) if target == "gfx942" else _ptxas_usage(compiled.asm["ptx"])
    except Exception as exc:  # a compiler (or ptxas) error is the finding: report it with its launch
        detail = exc.stderr if isinstance(exc, subprocess.CalledProcessError) else exc
        return {"error": f"{type(exc).__name__}: {detail}".strip()}
    md = compiled.metadata
    result = {**usage, "shared": md.shared, "num_warps": md.num_warps, "num_stages": md.num_stages}
    if target in SM_LIMITS:
        result["occupancy"] = occupancy(target, result["regs"], md.shared, md.num_warps)
    result.update({name: compiled.asm[name] for name in keep if name in compiled.asm})   # ptx: NVIDIA only
    return result


def compile_in_subprocess(launches: Iterable[Launch], targets: Iterable[str] = tuple(TARGETS),
                          keep: tuple[str, ...] = (), workers: int | None = None,
                          timeout: float = 600) -> list[dict[str, Any]]:
    """Compile every launch for every target in fresh processes without ``TRITON_INTERPRET`` and with a
    throw-away Triton cache (nothing is cached between runs), ``workers`` processes at once (default: up to
    2, the CI machine's cores). One result per (launch, target), in that order, each with its ``launch``
    (as JSON) and ``target``."""
    jobs = [(launch.to_json(), target) for launch in launches for target in targets]
    workers = max(1, min(workers or min(2, os.cpu_count() or 1), len(jobs)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="triton-aot-") as cache:
        env["TRITON_CACHE_DIR"] = cache
        procs = []
        try:
            for i in range(workers):
                request = Path(cache) / f"jobs-{i}.json"
                request.write_text(json.dumps({"jobs": jobs[i::workers], "keep": list(keep)}))
                procs.append(subprocess.Popen([sys.executable, "-m", __name__, str(request)], stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True, env=env))
            outputs = [proc.communicate(timeout=timeout) for proc in procs]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    for proc, (_, stderr) in zip(procs, outputs):
        if proc.returncode != 0:
            raise RuntimeError(f"a compile process failed (exit {proc.returncode}):\n{stderr[-4000:]}")
    chunks = [json.loads(stdout) for stdout, _ in outputs]
    return [chunks[i % workers][i // workers] for i in range(len(jobs))]


def _main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text())
    keep = tuple(request["keep"])
    json.dump([{"launch": data, "target": target, **compile_launch(Launch.from_json(data), target, keep)}
               for data, target in request["jobs"]], sys.stdout)


if __name__ == "__main__":
    _main()
