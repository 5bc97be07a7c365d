# Correct: walks the tiles column block first (pid_m = pid % num_pid_m), loads B as [BLOCK_N, BLOCK_K] and transposes it with tl.trans, and clamps the sentinel row ids to 0 before using them (masked anyway).
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, weights_ptr, sorted_ids_ptr, expert_ids_ptr, num_post_ptr,
                     N, K, EM, num_valid,
                     stride_am, stride_ak, stride_be, stride_bn, stride_bk, stride_cm, stride_cn,
                     TOP_K: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr, DOT_IN_FP32: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    if pid_m * BLOCK_M >= tl.load(num_post_ptr):
        return
    r = tl.load(sorted_ids_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
    keep = r < num_valid
    r = tl.where(keep, r, 0).to(tl.int64)
    n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < N
    mask_c = keep[:, None] & n_ok[None, :]
    out = c_ptr + r[:, None] * stride_cm + n[None, :] * stride_cn
    expert = tl.load(expert_ids_ptr + pid_m)
    if expert == -1:
        zero = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        tl.store(out, zero.to(c_ptr.dtype.element_ty), mask=mask_c)
        return
    expert = expert.to(tl.int64)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    kk = tl.arange(0, BLOCK_K)
    for k_start in range(0, K, BLOCK_K):
        k_ok = (k_start + kk) < K
        a_tile = tl.load(a_ptr + (r // TOP_K)[:, None] * stride_am + (k_start + kk)[None, :] * stride_ak,
                         mask=keep[:, None] & k_ok[None, :], other=0.0)
        b_nk = tl.load(b_ptr + expert * stride_be + n[:, None] * stride_bn + (k_start + kk)[None, :] * stride_bk,
                       mask=n_ok[:, None] & k_ok[None, :], other=0.0)
        b_tile = tl.trans(b_nk)
        if DOT_IN_FP32:
            acc += tl.dot(a_tile.to(tl.float32), b_tile.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.dot(a_tile, b_tile)
    if MUL_ROUTED_WEIGHT:
        w = tl.load(weights_ptr + r, mask=keep, other=0.0)
        acc *= w.to(tl.float32)[:, None]
    tl.store(out, acc.to(c_ptr.dtype.element_ty), mask=mask_c)
