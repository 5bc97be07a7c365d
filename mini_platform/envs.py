"""Environment variables read by mini_platform, in one place.

| variable | meaning |
| --- | --- |
| ``MINI_PLATFORM`` | select exactly one platform plugin (out-of-tree or built-in) by name; no other plugin module is imported (SGLang's rule) |
| ``MINI_PLATFORM_TARGET_DEVICE`` | ``cpu`` short-circuits resolution to the CPU platform, GPU or not (a runtime stand-in for a CPU build of vLLM, made with ``VLLM_TARGET_DEVICE=cpu`` at install time); ``cuda`` or unset resolves as usual; anything else is an error |
| ``MINI_PLATFORM_PLUGINS`` | comma-separated allow-list of plugin names; unset loads all, empty loads none (vLLM's ``VLLM_PLUGINS``) |
| ``MINI_PLATFORM_KERNEL_BACKEND`` | force a kernel backend (``cpu``, ``triton``, ``npu``) whatever the platform |
| ``MINI_PLATFORM_CPU_COMPILED`` | ``0`` runs every kernel of the ``cpu`` backend in torch even when numba is installed (default ``1``: decode attention, rotary embedding, RMSNorm, the gated SiLU and the KV cache write in fp32 and bf16, and the matmul of one bf16 token, run the compiled kernels of ``ops/cpu/compiled.py``) |
| ``MINI_PLATFORM_CPU_SHM_ALLREDUCE`` | ``0`` sends every CPU all-reduce through gloo (default ``1``: messages up to 1 MiB go through the shared-memory all-reduce of ``distributed/shm_allreduce.py`` while not capturing a graph) |
| ``MINI_PLATFORM_SHM_BROADCAST`` | ``0`` sends each step's inputs to the tensor-parallel workers down their pipes, pickled per worker (default ``1``: once, through the shared-memory ring of ``distributed/shm_broadcast.py``) |
| ``MINI_PLATFORM_NPU_MOE_ROUTING`` | the npu MoE call sequence: ``v2`` (default; ``npu_moe_init_routing_v2`` + ``npu_moe_token_unpermute``, vllm-ascend v0.11 to now) or ``v1`` (``npu_moe_init_routing`` + ``npu_moe_finalize_routing``, vllm-ascend v0.9.1) |

The readers the kernels ask at every call (the kernel backend, the compiled CPU kernels, the shared-memory all-reduce,
the npu MoE routing) are read once per forward of the model runner (:func:`read_once`): a change made while a forward
runs holds from the next one.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
from typing import Callable, Collection, Iterator, Mapping, TypeVar

T = TypeVar("T")

SELECT = "MINI_PLATFORM"
TARGET_DEVICE = "MINI_PLATFORM_TARGET_DEVICE"
PLUGINS = "MINI_PLATFORM_PLUGINS"
KERNEL_BACKEND = "MINI_PLATFORM_KERNEL_BACKEND"
NPU_MOE_ROUTING = "MINI_PLATFORM_NPU_MOE_ROUTING"
CPU_COMPILED = "MINI_PLATFORM_CPU_COMPILED"
CPU_SHM_ALLREDUCE = "MINI_PLATFORM_CPU_SHM_ALLREDUCE"
SHM_BROADCAST = "MINI_PLATFORM_SHM_BROADCAST"
NPU_MOE_ROUTINGS = ("v1", "v2")


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


class _ReadOnce(threading.local):
    """Per thread (as the kernel backend's ``use_backend`` stack): inside a :func:`read_once` block, the value each
    reader below has read from the process environment so far, by reader; None outside one."""
    values: dict[Callable[..., object], object] | None = None


_read_once = _ReadOnce()


def _once(read: Callable[[Mapping[str, str] | None], T]) -> Callable[[Mapping[str, str] | None], T]:
    """``read`` unchanged, except inside a :func:`read_once` block, where its value for the process environment is
    read and checked at its first call and kept to the end of the block. For the readers each kernel call asks."""
    @functools.wraps(read)
    def reader(env: Mapping[str, str] | None = None) -> T:
        values = _read_once.values
        if env is not None or values is None:
            return read(env)
        if read not in values:
            values[read] = read(None)
        return values[read]
    return reader


@contextlib.contextmanager
def read_once() -> Iterator[None]:
    """Inside the block, each reader marked ``_once`` reads and checks its variable once, at its first call, and
    returns that value to the end of the block: the model runner wraps each forward in it, where every kernel call
    would otherwise read and parse the variable again (1-2 microseconds each time: 2-3 % of the mixed workload of
    ``benchmarks/vs_transformers.py``, measured on the 2-core Xeon). A change to the environment takes effect at the
    next block. vLLM caches its variables for the same reason, for the rest of the process (``enable_envs_cache()`` at
    the end of ``EngineCore.__init__`` in ``vllm/v1/engine/core.py``, read at commit 00080ee)."""
    previous = _read_once.values
    _read_once.values = {} if previous is None else previous   # a nested block keeps the outer block's values
    try:
        yield
    finally:
        _read_once.values = previous


def selected_platform(env: Mapping[str, str] | None = None) -> str | None:
    """The plugin name chosen with ``MINI_PLATFORM``, or None when unset or blank."""
    value = _env(env).get(SELECT, "").strip()
    return value or None


TARGET_DEVICES = ("cpu", "cuda")  # cuda = resolve as usual (vLLM's default target); only cpu changes anything


def target_device(env: Mapping[str, str] | None = None) -> str | None:
    """``MINI_PLATFORM_TARGET_DEVICE`` stripped and lower-cased, None when unset or blank. Only ``cpu``
    changes resolution (vLLM's rule); :func:`check_target_device` refuses values that mean nothing."""
    return _env(env).get(TARGET_DEVICE, "").strip().lower() or None


def check_target_device(env: Mapping[str, str] | None = None) -> None:
    """Refuse a target this engine does not understand (a typo, or a plugin's name) instead of ignoring it."""
    value = target_device(env)
    if value is not None and value not in TARGET_DEVICES:
        raise ValueError(f"{TARGET_DEVICE}={value!r} is not understood: 'cpu' forces the CPU platform, 'cuda' (or "
                         "unset) resolves as usual; to pick a plugin platform by name, set MINI_PLATFORM instead")


def plugin_allow_list(env: Mapping[str, str] | None = None) -> frozenset[str] | None:
    """Names allowed by ``MINI_PLATFORM_PLUGINS``; None when the variable is absent (allow all)."""
    raw = _env(env).get(PLUGINS)
    if raw is None:
        return None
    return frozenset(item.strip() for item in raw.split(",") if item.strip())


@_once
def kernel_backend(env: Mapping[str, str] | None = None) -> str | None:
    value = _env(env).get(KERNEL_BACKEND, "").strip().lower()
    return value or None


def check_kernel_backend(env: Mapping[str, str] | None = None, known: Collection[str] = ()) -> None:
    """Refuse a ``MINI_PLATFORM_KERNEL_BACKEND`` that names none of the ``known`` backends (the registered
    ones: plugins add their own, so the caller, which can see the registry, passes them)."""
    value = kernel_backend(env)
    if value is not None and value not in known:
        raise ValueError(f"{KERNEL_BACKEND}={value!r}: unknown kernel backend {value!r}; choose one of "
                         f"{sorted(known)} or unset it")


@_once
def npu_moe_routing(env: Mapping[str, str] | None = None) -> str:
    """``v1`` or ``v2`` from ``MINI_PLATFORM_NPU_MOE_ROUTING`` (default ``v2``); anything else is an error."""
    value = _env(env).get(NPU_MOE_ROUTING, "").strip().lower() or "v2"
    if value not in NPU_MOE_ROUTINGS:
        raise ValueError(f"{NPU_MOE_ROUTING}={value!r} is not a known npu MoE routing; use one of {list(NPU_MOE_ROUTINGS)}")
    return value


@_once
def cpu_compiled(env: Mapping[str, str] | None = None) -> bool:
    """False when ``MINI_PLATFORM_CPU_COMPILED`` is ``0``, True when it is ``1`` or unset; anything else is an error."""
    value = _env(env).get(CPU_COMPILED, "").strip() or "1"
    if value not in ("0", "1"):
        raise ValueError(f"{CPU_COMPILED}={value!r} is not understood: 1 (or unset) uses the compiled CPU kernels "
                         "when numba is installed, 0 runs them in torch")
    return value == "1"


def _switch(name: str, meaning: str, env: Mapping[str, str] | None) -> bool:
    value = _env(env).get(name, "").strip() or "1"
    if value not in ("0", "1"):
        raise ValueError(f"{name}={value!r} is not understood: {meaning}")
    return value == "1"


@_once
def cpu_shm_allreduce(env: Mapping[str, str] | None = None) -> bool:
    """False when ``MINI_PLATFORM_CPU_SHM_ALLREDUCE`` is ``0``, True when it is ``1`` or unset; else an error."""
    return _switch(CPU_SHM_ALLREDUCE, "1 (or unset) sends small CPU all-reduces through shared memory, 0 sends "
                   "every one through gloo", env)


def shm_broadcast(env: Mapping[str, str] | None = None) -> bool:
    """False when ``MINI_PLATFORM_SHM_BROADCAST`` is ``0``, True when it is ``1`` or unset; else an error."""
    return _switch(SHM_BROADCAST, "1 (or unset) broadcasts each step's inputs through shared memory, 0 pickles "
                   "them down each worker's pipe", env)


# Every variable above and its check (None: any value; MINI_PLATFORM and MINI_PLATFORM_PLUGINS name plugins,
# which resolving the platform checks against the installed ones). check_all runs them all at once.
VARIABLES: dict[str, Callable[..., object] | None] = {
    SELECT: None,
    TARGET_DEVICE: check_target_device,
    PLUGINS: None,
    KERNEL_BACKEND: check_kernel_backend,
    CPU_COMPILED: cpu_compiled,
    CPU_SHM_ALLREDUCE: cpu_shm_allreduce,
    SHM_BROADCAST: shm_broadcast,
    NPU_MOE_ROUTING: npu_moe_routing,
}


def check_all(env: Mapping[str, str] | None = None, kernel_backends: Collection[str] = ()) -> None:
    """Check every ``MINI_PLATFORM_*`` variable of :data:`VARIABLES` now (the engine calls it when it is built),
    so that a bad value fails there, naming the variable, its value and the values allowed, rather than at
    the first step that reads it. ``kernel_backends``: the registered kernel backends."""
    for name, check in VARIABLES.items():
        if check is check_kernel_backend:
            check(env, kernel_backends)
        elif check is not None:
            check(env)
