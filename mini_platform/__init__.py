"""mini_platform: a small inference engine that runs on CPU, on NVIDIA GPUs (Triton) and on Ascend NPUs (torch_npu).

Importing this package never imports torch: the platform layer is plain Python, and
``current_platform`` is resolved on first access (see :mod:`mini_platform.platforms`).
The engine API (``LLM``, ``LLMEngine``, ``SamplingParams``) is imported when first used.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public names resolved on first access, so that `import mini_platform` stays light.
_LAZY_ATTRS = {
    "current_platform": "mini_platform.platforms",
    "LLM": "mini_platform.engine",
    "LLMEngine": "mini_platform.engine",
    "SamplingParams": "mini_platform.sampler",
}

__all__ = ["__version__", *_LAZY_ATTRS]


def __getattr__(name: str) -> Any:
    module = _LAZY_ATTRS.get(name)
    if module is None:
        raise AttributeError(f"module 'mini_platform' has no attribute {name!r}")
    # `current_platform` is not cached here: mini_platform.platforms owns the cache.
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_ATTRS))
