"""Emulated ``torch_npu.npu_swiglu``.

Source: the op's documentation in torch-npu 2.13.0 (``torch_npu/_op_plugin_docs.py``):
``swiglu(x, dim=-1) = swish(A) * B``, "“A”和“B”是x沿dim维度切分的Tensor": split ``self`` in two halves along
``dim`` and return ``silu(A) * B`` (the first half is the gate, as in vLLM's ``SiluAndMul``), computed in fp32
and returned in the input dtype. Signature, output shape and dtype as that wheel's schema and meta function
(tests/test_torch_npu_wheel.py). Emulation note: verified against
an emulation of torch_npu semantics; not run on Ascend hardware here.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["npu_swiglu"]


def npu_swiglu(self: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``silu(A) * B`` where ``A, B = self.chunk(2, dim)``; same dtype as ``self``."""
    if self.shape[dim] % 2:
        raise ValueError(f"npu_swiglu: dim {dim} of shape {tuple(self.shape)} must have an even size")
    a, b = self.float().chunk(2, dim=dim)
    return (F.silu(a) * b).to(self.dtype)
