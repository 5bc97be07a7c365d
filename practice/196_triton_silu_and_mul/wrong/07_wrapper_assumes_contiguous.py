# Mistake: The wrapper passes 2 * d as the input row stride, assuming x is contiguous, instead of the stride of the flattened rows.
"""Exercise 196 (a wrong solution): a Triton SiLU-and-mul kernel."""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def silu_and_mul_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, d, BLOCK: tl.constexpr):
    """Program (row, j): out[row, j*BLOCK:(j+1)*BLOCK] = silu(x[row, cols]) * x[row, d + cols], masked at d."""
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    gate = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * x_row_stride + d + cols, mask=mask, other=0.0).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """silu(x[..., :d]) * x[..., d:] for x [..., 2d], through silu_and_mul_kernel."""
    if x.shape[-1] % 2:
        raise ValueError(f"the last dim must be even (gate and up halves), got {x.shape[-1]}")
    d = x.shape[-1] // 2
    rows = x.reshape(-1, 2 * d)
    out = torch.empty(rows.shape[0], d, dtype=x.dtype, device=x.device)
    block = min(1024, triton.next_power_of_2(d))
    silu_and_mul_kernel[(rows.shape[0], triton.cdiv(d, block))](rows, out, 2 * d, d, d, BLOCK=block)
    return out.reshape(*x.shape[:-1], d)
