# Mistake: Writes the result to row r // TOP_K (the token) instead of the flat row r.
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def grouped_gemm_kernel(a_ptr, b_ptr, c_ptr, weights_ptr, sorted_ids_ptr, expert_ids_ptr,
                        N, K, num_valid, stride_am, stride_be, stride_bn, stride_cm,
                        TOP_K: tl.constexpr, MUL_WEIGHT: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Program (pid_m, pid_n): for the flat rows r = sorted_ids[pid_m*BLOCK_M : (pid_m+1)*BLOCK_M] that are
    < num_valid and the columns n of block pid_n (< N):
        c[r, n] = (weights[r] *) sum_k a[r // TOP_K, k] * b[expert, n, k],   expert = expert_ids[pid_m]
    in fp32; expert == -1 (owned elsewhere) writes zeros. Inner strides of a, b, c are 1."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = tl.load(sorted_ids_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))   # flat indices t*TOP_K + j
    row_ok = rows < num_valid                                                   # the sentinel is num_valid
    expert = tl.load(expert_ids_ptr + pid_m)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    c_ptrs = c_ptr + (rows // TOP_K)[:, None] * stride_cm + cols[None, :]
    c_mask = row_ok[:, None] & col_ok[None, :]
    if expert == -1:
        tl.store(c_ptrs, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32).to(c_ptr.dtype.element_ty), mask=c_mask)
        return
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    a_rows = rows // TOP_K
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < K
        a = tl.load(a_ptr + a_rows[:, None] * stride_am + ks[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptr + expert * stride_be + cols[None, :] * stride_bn + ks[:, None],
                    mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    if MUL_WEIGHT:
        acc = acc * tl.load(weights_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)[:, None]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)

def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int,
                         expert_map: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Exercise 231 in torch: (sorted_ids, expert_ids, num_tokens_post_padded), sentinel = numel."""
    flat = topk_ids.reshape(-1).long()
    numel = flat.numel()
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    ends = torch.cumsum(padded, 0)
    sorted_ids = torch.full((numel + num_experts * (block_size - 1),), numel, dtype=torch.int32, device=flat.device)
    expert_ids = torch.zeros(triton.cdiv(sorted_ids.numel(), block_size), dtype=torch.int32, device=flat.device)
    for e in range(num_experts):
        start = int(ends[e] - padded[e])
        rows = torch.nonzero(flat == e).flatten()
        sorted_ids[start:start + rows.numel()] = rows.to(torch.int32)
        expert_ids[start // block_size:int(ends[e]) // block_size] = e
    if expert_map is not None:
        expert_ids = expert_map.to(device=expert_ids.device, dtype=torch.int32)[expert_ids.long()]
    return sorted_ids, expert_ids, int(ends[-1]) if num_experts else 0


def grouped_gemm(a: torch.Tensor, b: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor | None = None,
                 expert_map: torch.Tensor | None = None, block_m: int = 16) -> torch.Tensor:
    """c [T*K, N]: row t*K+j = (w[t, j] *) a[t] @ b[local expert of topk_ids[t, j]]^T; a [T, H], b [E_local, N, H]."""
    a, b = a.contiguous(), b.contiguous()
    num_tokens, top_k = topk_ids.shape
    num_experts = b.shape[0] if expert_map is None else expert_map.numel()
    sorted_ids, expert_ids, num_post = moe_align_block_size(topk_ids, block_m, num_experts, expert_map)
    n, k = b.shape[1], b.shape[2]
    # NaN marks any row the kernel forgets to write
    c = torch.full((num_tokens * top_k, n), float("nan"), dtype=a.dtype, device=a.device)
    weights = (topk_weights if topk_weights is not None else torch.ones(num_tokens, top_k, device=a.device)).float().contiguous()
    grid = (num_post // block_m, triton.cdiv(n, 16))
    if grid[0]:
        grouped_gemm_kernel[grid](a, b, c, weights, sorted_ids, expert_ids, n, k, num_tokens * top_k,
                                  a.stride(0), b.stride(0), b.stride(1), c.stride(0),
                                  TOP_K=top_k, MUL_WEIGHT=topk_weights is not None,
                                  BLOCK_M=block_m, BLOCK_N=16, BLOCK_K=16)
    return c
