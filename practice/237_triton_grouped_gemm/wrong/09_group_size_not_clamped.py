# Mistake: Uses GROUP_M as the size of the last group too, so when the M-blocks do not fill it some tiles of that group are never computed.
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, weights_ptr, sorted_ids_ptr, expert_ids_ptr, num_post_ptr,
                     N, K, EM, num_valid,
                     stride_am, stride_ak, stride_be, stride_bn, stride_bk, stride_cm, stride_cn,
                     TOP_K: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr, DOT_IN_FP32: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """c[r, n] = (weights[r] *) sum_k a[r // TOP_K, k] * b[expert_ids[pid_m], n, k] for the rows r of each M-block."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # GROUP_M row blocks in a row take turns over the column blocks (vLLM's ordering; any cover would be correct)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = GROUP_M
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    if pid_m * BLOCK_M >= tl.load(num_post_ptr):
        return                                                      # past the padded runs: nothing to do
    rows = tl.load(sorted_ids_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)   # flat t*TOP_K + j
    row_ok = rows < num_valid                                       # the sentinel pads the run
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    out_ok = row_ok[:, None] & col_ok[None, :]
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    if expert == -1:                                                # owned by another rank: contributes zeros
        tl.store(c_ptrs, tl.zeros((BLOCK_M, BLOCK_N), tl.float32).to(c_ptr.dtype.element_ty), mask=out_ok)
        return
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        a = tl.load(a_ptr + (rows // TOP_K)[:, None] * stride_am + (k0 + ks)[None, :] * stride_ak,
                    mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptr + expert * stride_be + cols[None, :] * stride_bn + (k0 + ks)[:, None] * stride_bk,
                    mask=k_ok[:, None] & col_ok[None, :], other=0.0)               # b[expert] read as [K, N]
        if DOT_IN_FP32:
            acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    if MUL_ROUTED_WEIGHT:
        acc = acc * tl.load(weights_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)[:, None]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=out_ok)
