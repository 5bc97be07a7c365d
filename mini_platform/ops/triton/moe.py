"""Mixture-of-experts kernels in Triton, after vLLM's ``fused_moe`` design.

1. :func:`moe_align_block_size` sorts the ``T*K`` (token, slot) pairs by expert and pads each expert's run
   to a multiple of the GEMM's ``BLOCK_M`` with a sentinel, so every M-block of rows belongs to ONE expert.
2. :func:`fused_moe_kernel` is a grouped GEMM: program ``(pid_m, pid_n)`` reads its block's expert id,
   gathers its rows through the sorted ids (``row = flat_index // top_k``), multiplies them by that
   expert's weight with ``tl.dot`` (fp32 accumulation), optionally scales by the routing weight in fp32,
   and scatters the result back to the rows' flat indices. Blocks of experts owned elsewhere (id -1)
   write zeros.
3. ``fused_experts`` = GEMM1 (``w13``) -> ``silu_and_mul`` -> GEMM2 (``w2``, weighted) -> sum over the K slots.

Routing: ``moe_topk_softmax`` computes the softmax in Triton and selects with the specification's own code;
``moe_grouped_topk`` (DeepSeek-V2/V3) is one program per token that scores, picks the groups and then the experts
by repeated arg-max (the lowest id among equal values, as the specification's stable sort), all in fp32.

vLLM sources read (vllm-project/vllm): ``fused_moe/moe_align_block_size.py`` at commit 05be9924
(docstring example, sentinel ``numel``, buffer ``numel + E*(block_size-1)``, ``expert_map`` applied to
the per-block ids) and ``fused_moe_kernel`` in ``fused_moe/fused_moe.py`` at commit 000d1458 (grouped
pid ordering, rows ``offs_token // top_k``, B ``[E, N, K]``, zeros written for expert -1, routed weight in fp32).
vLLM computes the alignment with a CUDA op; here it is vectorised torch (no host sync).

Precision: fp32 weights, and every dtype under the Triton interpreter (which miscomputes bf16), are
converted to fp32 on load and multiplied in full fp32 (``input_precision="ieee"``, not TF32). Compiled for
a GPU, bf16/fp16 operands go to ``tl.dot`` as they are (tensor cores), as in vLLM; the accumulator is fp32
either way. That GPU path is exercised only by the tests marked ``cuda``.
"""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from ..cpu.moe import (check_experts_args, check_grouped_topk_args, check_topk_args, num_global_experts,
                       select_topk)
from . import activation


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int,
                         expert_map: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """vLLM's alignment (``moe_align_block_size`` at commit 05be9924):
    ``(sorted_token_ids, expert_ids, num_tokens_post_padded)``.

    - ``sorted_token_ids`` int32 ``[numel + E*(block_size-1)]``: flat indices ``t*K + j`` into ``topk_ids``,
      grouped by expert (expert 0 first; ascending index within an expert), each expert's run padded to a
      multiple of ``block_size`` with the sentinel ``numel``; the tail past the last run is sentinel too.
    - ``expert_ids`` int32 ``[cdiv(len(sorted_token_ids), block_size)]``: the expert of each M-block, mapped
      through ``expert_map`` when given (-1 = owned elsewhere). Blocks past ``num_tokens_post_padded`` are
      unused (expert 0 before the map, as in vLLM at 05be9924).
    - ``num_tokens_post_padded`` int32 ``[1]``: the padded row count (a sum of per-expert multiples of block_size).
    An expert with no token gets no block. The ids are not range-checked (the router's are in range, and a
    check would wait for the device at every layer).
    """
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if expert_map is not None and tuple(expert_map.shape) != (num_experts,):
        raise ValueError(f"expert_map must be [num_experts={num_experts}] (global id -> local index, -1 = elsewhere), "
                         f"got shape {tuple(expert_map.shape)}")
    device = topk_ids.device
    flat = topk_ids.reshape(-1).long()
    numel = flat.numel()
    max_padded = numel + num_experts * (block_size - 1)
    counts = torch.zeros(num_experts, dtype=torch.long, device=device).scatter_add_(0, flat, torch.ones_like(flat))
    padded = (counts + block_size - 1) // block_size * block_size
    padded_end = torch.cumsum(padded, 0)
    padded_start = padded_end - padded
    order = torch.argsort(flat, stable=True)                   # flat indices, expert by expert
    experts_in_order = flat[order]
    first_of_expert = torch.cumsum(counts, 0) - counts          # where each expert starts in `order`
    rank = torch.arange(numel, device=device) - first_of_expert[experts_in_order]
    sorted_ids = torch.full((max_padded,), numel, dtype=torch.int32, device=device)
    sorted_ids[padded_start[experts_in_order] + rank] = order.to(torch.int32)
    num_blocks = triton.cdiv(max_padded, block_size)
    block_starts = torch.arange(num_blocks, device=device) * block_size
    expert_ids = torch.searchsorted(padded_end, block_starts, right=True)   # first expert whose run ends later
    expert_ids = torch.where(expert_ids < num_experts, expert_ids, 0).to(torch.int32)
    if expert_map is not None:
        expert_ids = expert_map.to(torch.int32)[expert_ids.long()]
    return sorted_ids, expert_ids, padded_end[-1:].to(torch.int32)


@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, weights_ptr, sorted_ids_ptr, expert_ids_ptr, num_post_ptr,
                     N, K, EM, num_valid,
                     stride_am, stride_ak, stride_be, stride_bn, stride_bk, stride_cm, stride_cn,
                     TOP_K: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr, DOT_IN_FP32: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """``c[r] = (w[r] *) a[r // TOP_K] @ b[expert]^T`` for the rows ``r`` of each expert-sorted M-block;
    ``a`` ``[*, K]``, ``b`` ``[E_local, N, K]``, ``c`` ``[num_valid, N]``. One program per (M-block, N-block)
    tile of a 1-D grid of ``cdiv(EM, BLOCK_M) * cdiv(N, BLOCK_N)``; M-blocks from ``*num_post_ptr`` on write
    nothing, sentinel rows (``r >= num_valid``) are neither read nor written, expert -1 writes zeros."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: GROUP_M row blocks share each column block while it is in cache.
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m
    if pid_m * BLOCK_M >= tl.load(num_post_ptr):
        return
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = tl.load(sorted_ids_ptr + offs_m).to(tl.int64)      # flat (token, slot) indices; num_valid = padding
    row_mask = rows < num_valid
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    c_ptrs = c_ptr + rows[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = row_mask[:, None] & n_mask[None, :]
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    if expert == -1:   # the expert lives on another rank: these rows contribute nothing here
        tl.store(c_ptrs, tl.zeros([BLOCK_M, BLOCK_N], tl.float32).to(c_ptr.dtype.element_ty), mask=c_mask)
        return
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (rows // TOP_K)[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + expert * stride_be + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k0
        a = tl.load(a_ptrs, mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        if DOT_IN_FP32:
            acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if MUL_ROUTED_WEIGHT:
        w = tl.load(weights_ptr + rows, mask=row_mask, other=0.0).to(tl.float32)
        acc = acc * w[:, None]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def block_config(num_rows: int, num_experts: int, n: int, k: int) -> dict[str, int]:
    """Tile sizes in the spirit of vLLM's default config: small M-blocks when there are few rows per expert.

    ``num_warps=8`` (a launch option, not a kernel argument): compiled by Triton 3.7.1 for sm_80/sm_90
    (``benchmarks/triton_compile.py``), the 64x64x64 fp32 GEMM (full-precision ``tl.dot``, no tensor cores)
    needs 207-222 registers per thread at 4 warps, leaving 8 resident warps (two programs) per SM, and the 16x64x64
    fp32 one spills 16 bytes on sm_90; at 8 warps they need 106-126 and 54-58, no spills, and the bf16
    GEMMs drop from 75-141 to 43-77 registers."""
    small = num_rows <= num_experts
    return {"BLOCK_M": 16 if small else 64,
            "BLOCK_N": min(64, max(16, triton.next_power_of_2(n))),
            "BLOCK_K": min(64, max(16, triton.next_power_of_2(k))),
            "GROUP_M": 1 if small else 8,
            "num_warps": 8}


def invoke_fused_moe_kernel(a: torch.Tensor, w: torch.Tensor, c: torch.Tensor, topk_weights: torch.Tensor,
                            sorted_ids: torch.Tensor, expert_ids: torch.Tensor, num_post: torch.Tensor,
                            top_k: int, mul_routed_weight: bool, config: dict[str, int]) -> None:
    """Launch the grouped GEMM: ``c`` ``[T*K, N]`` from ``a`` rows and ``w`` ``[E_local, N, K]``."""
    n, k = w.shape[1], w.shape[2]
    em = sorted_ids.shape[0]
    dot_in_fp32 = a.dtype == torch.float32 or os.environ.get("TRITON_INTERPRET") == "1"
    grid = (triton.cdiv(em, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"]),)
    fused_moe_kernel[grid](a, w, c, topk_weights, sorted_ids, expert_ids, num_post,
                           n, k, em, c.shape[0],
                           a.stride(0), a.stride(1), w.stride(0), w.stride(1), w.stride(2), c.stride(0), c.stride(1),
                           TOP_K=top_k, MUL_ROUTED_WEIGHT=mul_routed_weight, DOT_IN_FP32=dot_in_fp32, **config)


def fused_experts(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    """GEMM1 over sorted rows -> silu_and_mul -> GEMM2 weighted by the routing weight -> sum of the K slots."""
    check_experts_args(hidden, w13, w2, topk_weights, topk_ids, expert_map)
    t, h = hidden.shape
    top_k, inter = topk_ids.shape[1], w2.shape[2]
    num_rows = t * top_k
    if num_rows == 0:
        return torch.zeros_like(hidden)
    config = block_config(num_rows, num_global_experts(w13, expert_map), 2 * inter, h)
    sorted_ids, expert_ids, num_post = moe_align_block_size(topk_ids, config["BLOCK_M"],
                                                            num_global_experts(w13, expert_map), expert_map)
    weights = topk_weights.float().contiguous()
    gate_up = torch.empty((num_rows, 2 * inter), dtype=hidden.dtype, device=hidden.device)
    invoke_fused_moe_kernel(hidden, w13, gate_up, weights, sorted_ids, expert_ids, num_post, top_k, False, config)
    act = activation.silu_and_mul(gate_up)  # looked up at call time (exercise 196 stands in for it)
    config = {**config, **block_config(num_rows, num_global_experts(w13, expert_map), h, inter)}
    down = torch.empty((num_rows, h), dtype=torch.float32, device=hidden.device)
    invoke_fused_moe_kernel(act, w2, down, weights, sorted_ids, expert_ids, num_post, 1, True, config)
    return down.view(t, top_k, h).sum(dim=1).to(hidden.dtype)


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, x_row_stride, E, BLOCK_E: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_E)
    mask = cols < E
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * E + cols, e / tl.sum(e, axis=0), mask=mask)


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The fp32 softmax in Triton, one program per token; the selection is the specification's own
    :func:`select_topk` on its output, so ties break exactly as there (lower expert id first)."""
    check_topk_args(router_logits, top_k)
    t, e = router_logits.shape
    probs = torch.empty((t, e), dtype=torch.float32, device=router_logits.device)
    if t:
        logits = router_logits if router_logits.stride(-1) == 1 else router_logits.contiguous()
        _softmax_kernel[(t,)](logits, probs, logits.stride(0), e, BLOCK_E=triton.next_power_of_2(e))
    return select_topk(probs, top_k, renormalize)


@triton.jit
def _grouped_topk_kernel(logits_ptr, bias_ptr, weights_ptr, ids_ptr, logits_stride, routed_scaling_factor,
                         num_groups, group_size, topk_group, top_k,
                         SIGMOID: tl.constexpr, HAS_BIAS: tl.constexpr, RENORMALIZE: tl.constexpr,
                         BLOCK_G: tl.constexpr, BLOCK_GS: tl.constexpr, BLOCK_K: tl.constexpr):
    """One token row, seen as a ``[groups, experts per group]`` tile (any sizes: masked powers of two)."""
    row = tl.program_id(0).to(tl.int64)
    offs_g = tl.arange(0, BLOCK_G)[:, None]
    offs_j = tl.arange(0, BLOCK_GS)[None, :]
    expert = offs_g * group_size + offs_j                             # global expert id of each cell
    valid = (offs_g < num_groups) & (offs_j < group_size)
    x = tl.load(logits_ptr + row * logits_stride + expert, mask=valid, other=float("-inf")).to(tl.float32)
    if SIGMOID:
        scores = tl.where(valid, tl.sigmoid(x), 0.0)
    else:
        e = tl.exp(x - tl.max(tl.max(x, axis=1), axis=0))              # 0 in the padding
        scores = e / tl.sum(tl.sum(e, axis=1), axis=0)
    choice = scores
    if HAS_BIAS:
        choice = scores + tl.load(bias_ptr + expert, mask=valid, other=0.0).to(tl.float32)
    choice = tl.where(valid, choice, float("-inf"))

    best = tl.max(choice, axis=1)                                     # [BLOCK_G]
    if HAS_BIAS:   # V3: a group's two best experts (one copy of a repeated best value taken out)
        first = tl.min(tl.where(choice == best[:, None], offs_j, BLOCK_GS), axis=1)
        second = tl.max(tl.where(offs_j == first[:, None], float("-inf"), choice), axis=1)
        group_score = tl.where(second == float("-inf"), best, best + second)   # a one-expert group: its best
    else:          # V2: a group's best expert
        group_score = best
    group_ids = tl.arange(0, BLOCK_G)
    group_score = tl.where(group_ids < num_groups, group_score, float("-inf"))
    kept = group_ids < 0
    for _ in range(topk_group):                                       # the best group left, lower id on ties
        top = tl.max(group_score, axis=0)
        pick = tl.min(tl.where(group_score == top, group_ids, BLOCK_G), axis=0)
        kept = kept | (group_ids == pick)
        group_score = tl.where(group_ids == pick, float("-inf"), group_score)

    choice = tl.where(kept[:, None], choice, float("-inf"))
    offs_k = tl.arange(0, BLOCK_K)
    ids = tl.zeros([BLOCK_K], tl.int32)
    weights = tl.zeros([BLOCK_K], tl.float32)
    for k in range(top_k):                                            # the best expert left, lower id on ties
        top = tl.max(tl.max(choice, axis=1), axis=0)
        pick = tl.min(tl.min(tl.where(choice == top, expert, BLOCK_G * BLOCK_GS), axis=1), axis=0)
        chosen = expert == pick
        ids = tl.where(offs_k == k, pick, ids)
        weights = tl.where(offs_k == k, tl.sum(tl.sum(tl.where(chosen, scores, 0.0), axis=1), axis=0), weights)
        choice = tl.where(chosen, float("-inf"), choice)
    if RENORMALIZE:
        weights = weights / tl.sum(weights, axis=0)
    k_mask = offs_k < top_k
    tl.store(weights_ptr + row * top_k + offs_k, weights * routed_scaling_factor, mask=k_mask)
    tl.store(ids_ptr + row * top_k + offs_k, ids, mask=k_mask)


def moe_grouped_topk(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                     renormalize: bool, scoring_func: str = "softmax",
                     e_score_correction_bias: torch.Tensor | None = None,
                     routed_scaling_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Grouped top-k routing (DeepSeek-V2/V3), one program per token; the rules, ties included, are those of
    ``mini_platform.ops.moe_grouped_topk``: fp32 weights and int32 ids, both ``[T, K]``."""
    check_grouped_topk_args(router_logits, top_k, num_expert_group, topk_group, scoring_func,
                            e_score_correction_bias)
    t, e = router_logits.shape
    weights = torch.empty((t, top_k), dtype=torch.float32, device=router_logits.device)
    ids = torch.empty((t, top_k), dtype=torch.int32, device=router_logits.device)
    if t:
        logits = router_logits if router_logits.stride(-1) == 1 else router_logits.contiguous()
        has_bias = e_score_correction_bias is not None
        bias = e_score_correction_bias.contiguous() if has_bias else logits   # not read without a bias
        group_size = e // num_expert_group
        _grouped_topk_kernel[(t,)](
            logits, bias, weights, ids, logits.stride(0), float(routed_scaling_factor), num_expert_group, group_size,
            topk_group, top_k, SIGMOID=scoring_func == "sigmoid", HAS_BIAS=has_bias, RENORMALIZE=bool(renormalize),
            BLOCK_G=triton.next_power_of_2(num_expert_group), BLOCK_GS=triton.next_power_of_2(group_size),
            BLOCK_K=triton.next_power_of_2(top_k))
    return weights, ids
