"""A CPU emulation of the torch_npu ops this engine calls, in plain torch.

Each op follows the documented semantics of the real one (its docstring names the document or
source). :func:`emulated_torch_npu` assembles a module named ``torch_npu`` from the ``__all__`` of
the submodules listed in :data:`SUBMODULES` (those that exist) and installs it in ``sys.modules``
for the duration of a ``with`` block, so the npu kernel backend, which imports torch_npu at call
time, runs on CPU tensors. It is never installed silently, and it refuses to shadow a real torch_npu.

Results obtained this way are labelled with :data:`EMULATION_NOTE`.

A submodule's ``__atb__`` names ops of the ``torch_npu.atb`` namespace (the ATB ops torch_npu does not put at
top level, ``ATB_API_LIST`` in the wheel's ``torch_npu/op_plugin/atb/_atb_ops.py``); they go to ``fake.atb``.

Every op is wrapped as a device kernel (:func:`npu.device_kernel`): a graph capture records it as one
task. The wrapper finds the op in its submodule at each call, so replacing it there with setattr (as
``practice/judge.py engine`` installs a learner's op) takes effect in a module already built. The graph and stream API is the ``npu`` submodule, installed as ``torch_npu.npu`` and, for the
duration of the block, as ``torch.npu``.

A submodule may define ``reset_process_state()``: it is called on entry, since the real library
keeps some state for the life of the process (see ``rotary._npu_rotary_embedding``) and each
``with`` block stands for a fresh process. That state lives in the submodule, so a nested block
resets it for the outer block too (the outer block then continues with the inner block's state).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any, Callable, Iterator

import torch

from . import npu

EMULATION_NOTE = "verified against an emulation of torch_npu semantics; not run on Ascend hardware here"

SUBMODULES = ("norm", "rotary", "activation", "attention", "moe", "mla", "moe_distribute")


class RealTorchNpuPresentError(RuntimeError):
    """A real torch_npu is importable; the emulation will not shadow it."""


def _is_emulation(module: object) -> bool:
    return getattr(module, "__emulation__", False) is True


def build_module() -> types.ModuleType:
    """A fresh module named ``torch_npu`` holding every emulated op (not installed anywhere)."""
    fake = types.ModuleType("torch_npu", f"Emulated torch_npu: {EMULATION_NOTE}.")
    fake.__spec__ = importlib.machinery.ModuleSpec("torch_npu", None)
    fake.__emulation__ = True
    fake.EMULATION_NOTE = EMULATION_NOTE
    fake.atb = types.ModuleType("torch_npu.atb", "Emulated torch_npu.atb ops.")
    for name in SUBMODULES:
        qualname = f"{__name__}.{name}"
        try:
            module = importlib.import_module(qualname)
        except ModuleNotFoundError as exc:
            if exc.name == qualname:
                continue  # this family of ops is not emulated (yet)
            raise
        reset = getattr(module, "reset_process_state", None)
        if reset is not None:
            reset()
        for namespace, prefix, ops in ((fake, "", module.__all__), (fake.atb, "atb.", getattr(module, "__atb__", ()))):
            for op in ops:
                if hasattr(namespace, op):
                    raise RuntimeError(f"emulated op {prefix}{op!r} is defined twice (second time in {qualname})")
                setattr(namespace, op, npu.device_kernel(prefix + op, _looked_up_at_call_time(module, op)))
    npu.reset_process_state()
    fake.npu = npu.build_npu_module()
    return fake


def _looked_up_at_call_time(module: types.ModuleType, op: str) -> Callable:
    """``module.op`` as it is when called, so an op replaced with setattr after the module was built
    (an engine part from ``practice/judge.py engine``) is the one that runs."""
    @functools.wraps(getattr(module, op))
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(module, op)(*args, **kwargs)
    return call


def is_installed() -> bool:
    """Whether the emulation is ``torch_npu`` in this process now (inside :func:`emulated_torch_npu`)."""
    return _is_emulation(sys.modules.get("torch_npu"))


@contextlib.contextmanager
def emulated_torch_npu() -> Iterator[types.ModuleType]:
    """Install the emulation as ``torch_npu`` inside the block; restore the previous state on exit.

    Refuses with :class:`RealTorchNpuPresentError` when a real torch_npu is importable: on an
    Ascend machine the real library must be used (tests marked ``npu`` do that).
    """
    previous = sys.modules.get("torch_npu")
    if previous is None or not _is_emulation(previous):
        if previous is not None or importlib.util.find_spec("torch_npu") is not None:
            raise RealTorchNpuPresentError(
                "a real torch_npu is importable here; refusing to shadow it with the CPU emulation. "
                "Run the npu backend against the real library instead (pytest -m npu)")
    fake = build_module()
    previous_npu = getattr(torch, "npu", None)
    sys.modules["torch_npu"] = fake
    torch.npu = fake.npu
    try:
        yield fake
    finally:
        if previous_npu is None:
            del torch.npu
        else:
            torch.npu = previous_npu
        if previous is None:
            sys.modules.pop("torch_npu", None)
        else:
            sys.modules["torch_npu"] = previous
