"""Every aten op that Lumen has no kernel for runs on the CPU, on CPU views of the same memory.

``install()`` registers :func:`run_on_host` as the PrivateUse1 *fallback* (``torch.library.Library("_",
"IMPL").fallback``): the dispatcher calls it for any op whose Lumen kernel is missing. Lumen memory is host
memory, so the op needs no copies: each Lumen tensor argument is replaced by ``torch.ops.lumen.cpu_view`` (a
CPU tensor over the same bytes), the CPU kernel runs, and each result comes back as a Lumen tensor: an
in-place result is the Lumen argument itself, a view of an argument is the same view of the Lumen tensor
(``as_strided``), anything new is copied to the device. ``out=`` arguments get a fresh CPU tensor, copied into
the Lumen one (resized when the op changed its shape). PyTorch's own test device OpenReg does the same
(``test/cpp_extensions/open_registration_extension/torch_openreg``: a few kernels in C++, the rest through
one fallback).
"""
from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

_library: torch.library.Library | None = None


def _is_lumen(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "lumen"


def _lumen_device(args: tuple, kwargs: dict) -> torch.device:
    for value in tree_flatten((args, kwargs))[0]:
        if _is_lumen(value):
            return value.device
        if isinstance(value, torch.device) and value.type == "lumen":
            return value
    return torch.device("lumen", torch.lumen.current_device())


def _on_host(value: Any) -> Any:
    if _is_lumen(value):
        return torch.ops.lumen.cpu_view(value)
    if isinstance(value, torch.device) and value.type == "lumen":
        return torch.device("cpu")
    return value


def run_on_host(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """Run ``op`` with its Lumen tensors seen as CPU tensors; results as Lumen tensors (the fallback)."""
    device = _lumen_device(args, kwargs)
    outs = {name: kwargs[name] for name in (a.name for a in op._schema.arguments if a.is_out)
            if _is_lumen(kwargs.get(name))}
    host_args, host_kwargs = tree_map(_on_host, args), tree_map(_on_host, kwargs)
    temps = {name: torch.empty(0, dtype=t.dtype) for name, t in outs.items()}
    host_kwargs.update(temps)
    result = op(*host_args, **host_kwargs)
    for name, target in outs.items():  # out= results: into the Lumen tensors the caller gave
        if target.shape != temps[name].shape:
            target.resize_(temps[name].shape)
        target.copy_(temps[name])
    back = {id(temps[name]): target for name, target in outs.items()}
    lumen_inputs = [(h, t) for h, t in zip(tree_flatten((host_args, host_kwargs))[0], tree_flatten((args, kwargs))[0])
                    if _is_lumen(t)]

    def to_lumen(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in back:
            return back[id(value)]
        for host, lumen in lumen_inputs:
            if value is host:  # an in-place op returns its argument
                return lumen
        for host, lumen in lumen_inputs:
            if value.untyped_storage().data_ptr() == host.untyped_storage().data_ptr() and value.numel():
                return lumen.as_strided(value.size(), value.stride(), value.storage_offset())  # a view
        return value.to(device)

    return tree_map(to_lumen, result)


def install() -> None:
    """Register :func:`run_on_host` as the PrivateUse1 fallback, once per process."""
    global _library
    if _library is not None or torch._C._dispatch_has_backend_fallback(torch._C.DispatchKey.PrivateUse1):
        return
    _library = torch.library.Library("_", "IMPL")  # noqa: TOR901 - a fallback lives in the global namespace
    _library.fallback(run_on_host, "PrivateUse1")
