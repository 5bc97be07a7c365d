"""Exercise 237: the grouped GEMM kernel of the Triton fused MoE, after vLLM's fused_moe_kernel. Keep the names.

The host code is the engine's (mini_platform.ops.triton.moe.invoke_fused_moe_kernel): it launches this kernel
on a 1-D grid of cdiv(EM, BLOCK_M) * cdiv(N, BLOCK_N) programs. Write the kernel body.
"""
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
    # TODO: pid -> (pid_m, pid_n), each tile once (vLLM groups GROUP_M row blocks; a plain row-major cover is correct too)
    # TODO: return when pid_m * BLOCK_M >= *num_post_ptr
    # TODO: the block's flat rows r = sorted_ids[pid_m*BLOCK_M + 0..BLOCK_M) and their mask r < num_valid; the columns
    # TODO: expert = expert_ids[pid_m]; expert == -1: store zeros to the valid rows and return
    # TODO: K loop: masked loads of a (rows r // TOP_K) and of b[expert] read as [BLOCK_K, BLOCK_N];
    #       DOT_IN_FP32: both to fp32, tl.dot(..., input_precision="ieee"); else tl.dot(a, b); accumulate in fp32
    # TODO: MUL_ROUTED_WEIGHT: multiply each row by weights[r] (fp32); masked store to c[r, n] in c's dtype
