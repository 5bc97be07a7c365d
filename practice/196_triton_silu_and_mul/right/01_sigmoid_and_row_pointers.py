# Correct: computes silu with tl.sigmoid, moves the base pointers to the row first, flattens with reshape(-1, x.shape[-1]) and checks the last dim after computing d with divmod.
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def silu_and_mul_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    block = tl.program_id(1)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = block * BLOCK + tl.arange(0, BLOCK)
    inside = offs < d
    g = tl.load(x_row + offs, mask=inside).to(tl.float32)
    u = tl.load(x_row + d + offs, mask=inside).to(tl.float32)
    y = g * tl.sigmoid(g) * u
    tl.store(out_row + offs, y.to(out_ptr.dtype.element_ty), mask=inside)


def silu_and_mul(x):
    d, odd = divmod(x.shape[-1], 2)
    if odd:
        raise ValueError(f"expected an even last dim [..., 2d], got shape {tuple(x.shape)}")
    flat = x.reshape(-1, x.shape[-1])
    n = flat.shape[0]
    result = torch.empty((n, d), dtype=x.dtype, device=x.device)
    BLOCK = min(1024, triton.next_power_of_2(d))
    grid = (n, triton.cdiv(d, BLOCK))
    silu_and_mul_kernel[grid](flat, result, flat.stride(0), result.stride(0), d, BLOCK=BLOCK)
    return result.view(*x.shape[:-1], d)
