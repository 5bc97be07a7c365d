# Correct: the plain row-major tile order (pid // num_pid_n), pointers advanced by BLOCK_K each step as vLLM does, and the K loop counted with tl.cdiv.
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
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    num_post = tl.load(num_post_ptr)
    if pid_m * BLOCK_M < num_post:
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        token_ids = tl.load(sorted_ids_ptr + offs_m).to(tl.int64)
        valid = token_ids < num_valid
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        e = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
        c_ptrs = c_ptr + stride_cm * token_ids[:, None] + stride_cn * offs_n[None, :]
        c_mask = valid[:, None] & (offs_n[None, :] < N)
        if e < 0:
            tl.store(c_ptrs, tl.zeros((BLOCK_M, BLOCK_N), dtype=c_ptr.dtype.element_ty), mask=c_mask)
        else:
            a_ptrs = a_ptr + (token_ids[:, None] // TOP_K) * stride_am + offs_k[None, :] * stride_ak
            b_ptrs = b_ptr + e * stride_be + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for step in range(0, tl.cdiv(K, BLOCK_K)):
                left = K - step * BLOCK_K
                a = tl.load(a_ptrs, mask=valid[:, None] & (offs_k[None, :] < left), other=0.0)
                b = tl.load(b_ptrs, mask=(offs_k[:, None] < left) & (offs_n[None, :] < N), other=0.0)
                if DOT_IN_FP32:
                    acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
                else:
                    acc = tl.dot(a, b, acc)
                a_ptrs += BLOCK_K * stride_ak
                b_ptrs += BLOCK_K * stride_bk
            if MUL_ROUTED_WEIGHT:
                w = tl.load(weights_ptr + token_ids, mask=valid, other=0)
                acc = acc * w[:, None]
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
