"""The matmul of every linear layer in plain torch: ``F.linear`` is the specification of ``linear``."""
from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from . import compiled


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ weight.T + bias``: x ``[..., K]``, weight ``[N, K]``, bias ``[N]`` or None -> ``[..., N]`` in x's dtype.

    One bf16 token (a decode step at batch 1) goes to the compiled GEMV of :mod:`.compiled` when numba is installed:
    torch's bf16 GEMM reads the weights well below the memory's bandwidth there (:mod:`.gemv`). Everything else, and
    any shape the GEMV does not take, is ``F.linear`` (oneDNN), which also raises torch's errors for bad
    shapes."""
    if _one_bf16_token(x, weight, bias) and compiled.available(x, weight, *(() if bias is None else (bias,)),
                                                               dtype=torch.bfloat16):
        return compiled.linear_bf16(x, weight, bias)
    return F.linear(x, weight, bias)


def _one_bf16_token(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> bool:
    """What the GEMV takes: a bf16 ``x`` holding one row, a contiguous ``[N, K]`` weight it can read as 32-bit words
    (``K`` even, from an even offset, on a little-endian machine: two values per word) and a ``[N]`` bias or None,
    shapes that agree (it reads without bounds checks)."""
    return (x.dtype is torch.bfloat16 and x.dim() > 0 and x.numel() == x.shape[-1] > 0 and weight.dim() == 2
            and weight.is_contiguous() and weight.shape[1] == x.shape[-1] and weight.shape[1] % 2 == 0
            and weight.storage_offset() % 2 == 0 and sys.byteorder == "little"
            and (bias is None or bias.shape == (weight.shape[0],)))
