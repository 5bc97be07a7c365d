"""Platforms: the base class, the built-in CPU and CUDA platforms, and ``current_platform``.

``current_platform`` is resolved on first access through this module's ``__getattr__`` and then
cached, so that a plugin can import :class:`Platform` from here without triggering resolution, and
so that nothing probes hardware at import time.
"""
from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import threading
from importlib.metadata import EntryPoint
from typing import Any, Callable, Mapping

from .. import envs, hardware, plugins, utils
from . import resolution
from .interface import Platform, PlatformEnum, UnspecifiedPlatform
from .resolution import UNSPECIFIED, Detector, PlatformResolutionError, resolve_platform

logger = logging.getLogger(__name__)

__all__ = [
    "Platform", "PlatformEnum", "UnspecifiedPlatform", "PlatformResolutionError", "UNSPECIFIED",
    "BUILTIN_DETECTORS", "resolve_platform", "resolve_current_platform_cls_qualname",
    "current_platform", "clear_current_platform", "LazyPlatform",
]


def _torch_is_cuda_build() -> bool:
    """Whether the installed torch was built with CUDA, read from torch/version.py without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return False
    match = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return match is not None


def _usable_nvidia_gpus() -> bool:
    # PCI functions alone are not enough: with no driver device node (a container started without
    # the GPUs, a host without the driver) CUDA cannot use the card.
    count, evidence = hardware.nvidia_device_count()
    return count > 0 and evidence != hardware.PCI_DEVICES and _torch_is_cuda_build()


def cuda_platform_plugin() -> str | None:
    """Active when the NVIDIA driver exposes a GPU (/dev or /proc) and torch is a CUDA build.

    Reads /dev, /proc and /sys only: it never creates a CUDA context.
    """
    if _usable_nvidia_gpus():
        return "mini_platform.platforms.cuda.CudaPlatform"
    count, evidence = hardware.nvidia_device_count()
    if count and evidence == hardware.PCI_DEVICES:
        logger.warning("Found %d NVIDIA GPU(s) in %s but no driver device node; not using CUDA", count, evidence)
    elif count:
        logger.warning("Found %d NVIDIA GPU(s) in %s, but torch is not a CUDA build", count, evidence)
    return None


def cpu_platform_plugin(env: Mapping[str, str] | None = None) -> str | None:
    """Active when the CPU is the explicit target, else as the fallback when the cuda platform is not."""
    if envs.target_device(env) == "cpu" or not _usable_nvidia_gpus():
        return "mini_platform.platforms.cpu.CpuPlatform"
    return None


BUILTIN_DETECTORS: dict[str, Detector] = {"cpu": cpu_platform_plugin, "cuda": cuda_platform_plugin}


def _entry_point_detector(ep: EntryPoint) -> Detector:
    """A detector that imports the plugin's module only when it is called."""
    def detect() -> str | None:
        func = ep.load()
        logger.info("Loaded platform plugin %s (%s)", ep.name, ep.value)
        return func()
    return detect


def resolve_current_platform_cls_qualname(env: Mapping[str, str] | None = None) -> str:
    """Discover platform plugins (metadata only) and apply the resolution rules (a target device this
    engine does not understand is refused first, rather than ignored)."""
    envs.check_target_device(env)
    # Every installed plugin is listed (an empty mapping sets no allow-list): MINI_PLATFORM_PLUGINS is
    # one of resolve_platform's rules and does not apply to an explicit MINI_PLATFORM selection.
    oot = {name: _entry_point_detector(ep)
           for name, ep in plugins.discover(plugins.PLATFORM_PLUGINS_GROUP, {}).items()}
    builtin = dict(BUILTIN_DETECTORS)
    if builtin.get("cpu") is cpu_platform_plugin:  # honour the CPU target of `env`, not only of os.environ
        builtin["cpu"] = functools.partial(cpu_platform_plugin, env)
    # Looked up on its module at call time: a replacement set there (exercise 180's solution, run by
    # `practice/judge.py engine`) takes effect at once.
    return resolution.resolve_platform(builtin, oot, os.environ if env is None else env)


class LazyPlatform:
    """The platform, created by ``create`` on the first :meth:`get` and cached (exercise 182 has this contract).

    Double-checked locking: :meth:`get` returns the cached platform without touching the lock; otherwise it
    takes the lock, looks again (another thread may have created it while this one waited) and only then
    calls ``create``. A failure caches nothing, so the next ``get`` tries again; an AttributeError becomes a
    RuntimeError (escaping a module ``__getattr__`` it would read as "no attribute current_platform"). A
    ``get`` from inside ``create`` on the same thread (a plugin reading current_platform at import or
    detection time) raises instead of waiting forever for the lock that thread holds.
    """

    def __init__(self, create: Callable[[], Platform]) -> None:
        self.create = create
        self._lock = threading.Lock()
        self._platform: Platform | None = None
        self._resolving: int | None = None  # the thread inside create, if any

    def get(self) -> Platform:
        platform = self._platform
        if platform is not None:
            return platform
        if self._resolving == threading.get_ident():
            raise RuntimeError("current_platform was accessed while it is being resolved; a platform plugin "
                               "must not read current_platform at import or detection time")
        with self._lock:
            if self._platform is None:  # another thread may have resolved it while we waited
                self._resolving = threading.get_ident()
                try:
                    self._platform = self.create()
                except AttributeError as exc:
                    raise RuntimeError(f"resolving current_platform failed: {type(exc).__name__}: {exc}") from exc
                finally:
                    self._resolving = None
            return self._platform


def _create_current_platform() -> Platform:
    """Resolve the platform class (exercises 180 and 183 run here), let it prepare the process, build it."""
    platform_cls = utils.resolve_obj_by_qualname(resolve_current_platform_cls_qualname())
    platform_cls.prepare_process_env(os.environ)
    return platform_cls()


_current = LazyPlatform(_create_current_platform)


def clear_current_platform() -> None:
    """Forget the resolved platform, so the next access resolves again (tests, notebooks): a new
    :class:`LazyPlatform`, the class looked up here at call time (``practice/judge.py engine`` swaps it)."""
    global _current
    _current = LazyPlatform(_create_current_platform)


def __getattr__(name: str) -> Any:
    if name == "current_platform":
        return _current.get()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
