"""Multi-head latent attention (DeepSeek-V2/V3) as Triton kernels, over the paged latent cache of ``ops.cpu.mla``.

- ``concat_and_cache_mla`` and ``gather_mla_cache``: one program per token copies a latent and a rotary key
  to (from) its slot.
- ``mla_decode_attention``: the absorbed decode in two stages, after vLLM's Triton MLA decode
  (``_fwd_grouped_kernel_stage1`` / ``_fwd_kernel_stage2`` in ``vllm/attention/ops/triton_decode_attention.py``,
  vllm-project/vllm at commit 0f490657, read for its design; ``num_kv_splits = 4`` as its Triton MLA backend
  sets). Every head reads the same latent, so a stage-1 program owns a block of ``BLOCK_H`` heads of one request
  and one of ``NUM_KV_SPLITS`` pieces of its sequence: it loads each tile of ``BLOCK_N`` latents once, scores
  it as ``q_nope . c + q_pe . k_pe`` (two dots, over ``L`` and over ``R``), uses the same tile as the value, and
  writes its normalised partial output and log-sum-exp. Stage 2 merges the pieces by their log-sum-exp.
  Unlike vLLM, the caches are two tensors (vllm-ascend's layout), an empty piece writes ``lse = -inf`` and
  zeros, and a request of length 0 gives zeros (vLLM divides 0 by 0 there). ``seq_lens`` is read only on the
  device, so a decode step can be captured in a CUDA graph.
- ``mla_prefill_attention``: varlen causal attention whose K head dim differs from V's (``Dqk`` 192, ``Dv`` 128
  in DeepSeek-V3); both are padded to powers of two with masks, so any size works. A program owns ``BLOCK_M``
  queries of one request and one head, placed as in ``attention.paged_attention`` (no host-side metadata).

Every kernel loads in the tensors' dtype, computes in fp32 (the interpreter miscomputes bf16) with full-fp32
dots (``input_precision="ieee"``) and stores in the output's dtype. Shape checks only: no host reads.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..cpu.mla import check_mla_cache_args
from .attention import _find_seq_idx, _online_softmax_step

NUM_KV_SPLITS = 4   # pieces of the sequence per request in the decode (vLLM's Triton MLA backend uses 4)
DECODE_BLOCK_H = 16  # heads per decode program (tl.dot wants >= 16 rows)
DECODE_BLOCK_N = 16  # latents per decode tile
PREFILL_BLOCK_M = 16  # queries per prefill program
PREFILL_BLOCK_N = 32  # keys per prefill tile


def _dot_size(n: int) -> int:
    """A head-dim tile: the next power of two (tl.arange), at least 16 (tl.dot's K on NVIDIA)."""
    return max(16, triton.next_power_of_2(n))


# -- the cache -----------------------------------------------------------------------------------

@triton.jit
def _concat_and_cache_mla_kernel(kv_c_ptr, k_pe_ptr, kv_c_cache_ptr, k_pe_cache_ptr, slot_ptr,
                                 kv_c_stride, k_pe_stride, c_stride_b, c_stride_s, p_stride_b, p_stride_s,
                                 block_size, latent_dim, rope_dim, BLOCK_L: tl.constexpr, BLOCK_R: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + t).to(tl.int64)
    if slot < 0:  # padding
        return
    block, offset = slot // block_size, slot % block_size
    offs_l = tl.arange(0, BLOCK_L)
    l_mask = offs_l < latent_dim
    c = tl.load(kv_c_ptr + t * kv_c_stride + offs_l, mask=l_mask)
    tl.store(kv_c_cache_ptr + block * c_stride_b + offset * c_stride_s + offs_l,
             c.to(kv_c_cache_ptr.dtype.element_ty), mask=l_mask)
    offs_r = tl.arange(0, BLOCK_R)
    r_mask = offs_r < rope_dim
    pe = tl.load(k_pe_ptr + t * k_pe_stride + offs_r, mask=r_mask)
    tl.store(k_pe_cache_ptr + block * p_stride_b + offset * p_stride_s + offs_r,
             pe.to(k_pe_cache_ptr.dtype.element_ty), mask=r_mask)


def _check_contiguous_caches(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor) -> tuple[int, int]:
    """The cache pair's ``(L, R)``; the kernels index a token's row with unit stride."""
    latent, rope = check_mla_cache_args(kv_c_cache, k_pe_cache)
    if not (kv_c_cache.is_contiguous() and k_pe_cache.is_contiguous()):
        raise ValueError("the Triton MLA kernels need contiguous kv_c_cache and k_pe_cache")
    return latent, rope


def _unit_stride(x: torch.Tensor) -> torch.Tensor:
    return x if x.stride(-1) == 1 else x.contiguous()


def concat_and_cache_mla(kv_c: torch.Tensor, k_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """Write ``kv_c`` ``[T, L]`` and ``k_pe`` ``[T, R]`` to ``slot_mapping``; skip slots < 0 (no range check:
    that would read the slots on the host at every layer)."""
    latent, rope = _check_contiguous_caches(kv_c_cache, k_pe_cache)
    num_tokens = kv_c.shape[0] if kv_c.dim() == 2 else -1
    if kv_c.shape != (num_tokens, latent) or k_pe.shape != (num_tokens, rope) or slot_mapping.shape != (num_tokens,):
        raise ValueError(f"need kv_c [T, {latent}], k_pe [T, {rope}] and slot_mapping [T]; got {tuple(kv_c.shape)}, "
                         f"{tuple(k_pe.shape)} and {tuple(slot_mapping.shape)}")
    if num_tokens == 0:
        return
    kv_c, k_pe = _unit_stride(kv_c), _unit_stride(k_pe)
    _concat_and_cache_mla_kernel[(num_tokens,)](
        kv_c, k_pe, kv_c_cache, k_pe_cache, slot_mapping.contiguous(), kv_c.stride(0), k_pe.stride(0),
        kv_c_cache.stride(0), kv_c_cache.stride(1), k_pe_cache.stride(0), k_pe_cache.stride(1),
        kv_c_cache.shape[1], latent, rope, BLOCK_L=triton.next_power_of_2(latent),
        BLOCK_R=triton.next_power_of_2(rope))


@triton.jit
def _gather_mla_cache_kernel(kv_c_cache_ptr, k_pe_cache_ptr, kv_c_ptr, k_pe_ptr, block_tables_ptr, starts_ptr,
                             num_seqs, c_stride_b, c_stride_s, p_stride_b, p_stride_s, bt_stride, block_size,
                             latent_dim, rope_dim, BLOCK_L: tl.constexpr, BLOCK_R: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lo = 0   # the request of this row: the last b with starts[b] <= row (an empty request's start is the next one's)
    hi = num_seqs
    while lo < hi:
        mid = (lo + hi) // 2
        if tl.load(starts_ptr + mid) <= row:
            lo = mid + 1
        else:
            hi = mid
    seq = lo - 1
    pos = row - tl.load(starts_ptr + seq)
    block = tl.load(block_tables_ptr + seq * bt_stride + pos // block_size).to(tl.int64)
    offset = pos % block_size
    offs_l = tl.arange(0, BLOCK_L)
    l_mask = offs_l < latent_dim
    c = tl.load(kv_c_cache_ptr + block * c_stride_b + offset * c_stride_s + offs_l, mask=l_mask)
    tl.store(kv_c_ptr + row * latent_dim + offs_l, c, mask=l_mask)
    offs_r = tl.arange(0, BLOCK_R)
    r_mask = offs_r < rope_dim
    pe = tl.load(k_pe_cache_ptr + block * p_stride_b + offset * p_stride_s + offs_r, mask=r_mask)
    tl.store(k_pe_ptr + row * rope_dim + offs_r, pe, mask=r_mask)


def gather_mla_cache(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor, block_tables: torch.Tensor,
                     seq_lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each request's first ``seq_lens[b]`` latents and rotary keys, end to end: ``[S, L]``, ``[S, R]``. The output
    size is ``sum(seq_lens)``, read on the host (this runs for prefills, never inside a graph)."""
    latent, rope = _check_contiguous_caches(kv_c_cache, k_pe_cache)
    if block_tables.dim() != 2 or seq_lens.dim() != 1 or block_tables.shape[0] != seq_lens.shape[0]:
        raise ValueError(f"need block_tables [B, max_blocks] and seq_lens [B], got {tuple(block_tables.shape)} "
                         f"and {tuple(seq_lens.shape)}")
    capacity = block_tables.shape[1] * kv_c_cache.shape[1]
    lens = seq_lens.tolist()
    if any(not 0 <= n <= capacity for n in lens):
        raise ValueError(f"seq_lens must be in [0, max_blocks * block_size = {capacity}], got {lens}")
    total = sum(lens)
    kv_c = kv_c_cache.new_empty(total, latent)
    k_pe = k_pe_cache.new_empty(total, rope)
    if total:
        starts = (torch.cumsum(seq_lens, 0) - seq_lens).to(torch.int32)
        block_tables = _unit_stride(block_tables)
        _gather_mla_cache_kernel[(total,)](
            kv_c_cache, k_pe_cache, kv_c, k_pe, block_tables, starts, len(lens),
            kv_c_cache.stride(0), kv_c_cache.stride(1), k_pe_cache.stride(0), k_pe_cache.stride(1),
            block_tables.stride(0), kv_c_cache.shape[1], latent, rope,
            BLOCK_L=triton.next_power_of_2(latent), BLOCK_R=triton.next_power_of_2(rope))
    return kv_c, k_pe


# -- the absorbed decode ---------------------------------------------------------------------------

@triton.jit
def _mla_decode_stage1_kernel(q_nope_ptr, q_pe_ptr, kv_c_cache_ptr, k_pe_cache_ptr, block_tables_ptr, seq_lens_ptr,
                              mid_out_ptr, mid_lse_ptr, scale, num_heads, latent_dim, rope_dim,
                              qn_stride_b, qn_stride_h, qp_stride_b, qp_stride_h,
                              c_stride_b, c_stride_s, p_stride_b, p_stride_s, bt_stride, block_size,
                              BLOCK_H: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_R: tl.constexpr,
                              BLOCK_N: tl.constexpr, NUM_SPLITS: tl.constexpr):
    """Program ``(b, head block, split)``: softmax-weighted latents of one piece of request ``b``'s sequence for
    ``BLOCK_H`` heads, normalised by the piece's own sum, and the piece's log-sum-exp (``-inf`` when empty).
    ``mid_out`` is fp32 ``[B, nh, NUM_SPLITS, L]``, ``mid_lse`` fp32 ``[B, nh, NUM_SPLITS]``, both dense."""
    seq = tl.program_id(0).to(tl.int64)
    split = tl.program_id(2)
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    h_mask = heads < num_heads
    offs_l = tl.arange(0, BLOCK_L)
    offs_r = tl.arange(0, BLOCK_R)
    l_mask = offs_l < latent_dim
    r_mask = offs_r < rope_dim
    q_nope = tl.load(q_nope_ptr + seq * qn_stride_b + heads[:, None] * qn_stride_h + offs_l[None, :],
                     mask=h_mask[:, None] & l_mask[None, :], other=0.0).to(tl.float32)
    q_pe = tl.load(q_pe_ptr + seq * qp_stride_b + heads[:, None] * qp_stride_h + offs_r[None, :],
                   mask=h_mask[:, None] & r_mask[None, :], other=0.0).to(tl.float32)

    seq_len = tl.load(seq_lens_ptr + seq)
    per_split = tl.cdiv(seq_len, NUM_SPLITS)
    start = split * per_split
    end = tl.minimum(start + per_split, seq_len)
    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_L], tl.float32)
    for tile in range(start, end, BLOCK_N):   # every tile holds at least one token: the scores stay finite
        offs_n = tile + tl.arange(0, BLOCK_N)
        n_mask = offs_n < end
        block = tl.load(block_tables_ptr + seq * bt_stride + offs_n // block_size, mask=n_mask, other=0).to(tl.int64)
        offset = offs_n % block_size
        c = tl.load(kv_c_cache_ptr + block[:, None] * c_stride_b + offset[:, None] * c_stride_s + offs_l[None, :],
                    mask=n_mask[:, None] & l_mask[None, :], other=0.0).to(tl.float32)        # [BLOCK_N, BLOCK_L]
        pe = tl.load(k_pe_cache_ptr + block[:, None] * p_stride_b + offset[:, None] * p_stride_s + offs_r[None, :],
                     mask=n_mask[:, None] & r_mask[None, :], other=0.0).to(tl.float32)       # [BLOCK_N, BLOCK_R]
        s = tl.dot(q_nope, tl.trans(c), input_precision="ieee")
        s = (s + tl.dot(q_pe, tl.trans(pe), input_precision="ieee")) * scale                 # [BLOCK_H, BLOCK_N]
        s = tl.where(n_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, c, input_precision="ieee")                    # the latent is the value
        m_i = m_new

    empty = l_i == 0.0
    l_safe = tl.where(empty, 1.0, l_i)
    lse = tl.where(empty, float("-inf"), m_i + tl.log(l_safe))
    row = (seq * num_heads + heads) * NUM_SPLITS + split
    tl.store(mid_out_ptr + row[:, None] * latent_dim + offs_l[None, :], acc / l_safe[:, None],
             mask=h_mask[:, None] & l_mask[None, :])
    tl.store(mid_lse_ptr + row, lse, mask=h_mask)


@triton.jit
def _mla_decode_stage2_kernel(mid_out_ptr, mid_lse_ptr, out_ptr, num_heads, latent_dim, o_stride_b, o_stride_h,
                              BLOCK_L: tl.constexpr, NUM_SPLITS: tl.constexpr, BLOCK_S: tl.constexpr):
    """Program ``(b, head)``: merge the pieces, each weighted by ``exp(lse - max lse)``; zeros when all are empty."""
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_S)
    offs_l = tl.arange(0, BLOCK_L)
    s_mask = offs_s < NUM_SPLITS
    l_mask = offs_l < latent_dim
    row = (seq * num_heads + head) * NUM_SPLITS + offs_s
    lse = tl.load(mid_lse_ptr + row, mask=s_mask, other=float("-inf"))
    top = tl.max(lse, axis=0)
    weight = tl.exp(lse - tl.where(top == float("-inf"), 0.0, top))      # 0 for an empty piece
    parts = tl.load(mid_out_ptr + row[:, None] * latent_dim + offs_l[None, :],
                    mask=s_mask[:, None] & l_mask[None, :], other=0.0)
    total = tl.sum(weight, axis=0)
    out = tl.sum(weight[:, None] * parts, axis=0) / tl.where(total == 0.0, 1.0, total)
    tl.store(out_ptr + seq * o_stride_b + head * o_stride_h + offs_l, out.to(out_ptr.dtype.element_ty), mask=l_mask)


def mla_decode_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    """Absorbed MLA decode, one query per request: ``[B, nh, L]`` latent outputs (see ``mini_platform.ops``)."""
    latent, rope = _check_contiguous_caches(kv_c_cache, k_pe_cache)
    batch = seq_lens.shape[0] if seq_lens.dim() == 1 else -1
    if q_nope.dim() != 3 or q_nope.shape[0] != batch or q_nope.shape[2] != latent or \
            q_pe.shape != (*q_nope.shape[:2], rope):
        raise ValueError(f"need seq_lens [B], q_nope [B, num_heads, {latent}] and q_pe [B, num_heads, {rope}], got "
                         f"{tuple(seq_lens.shape)}, {tuple(q_nope.shape)} and {tuple(q_pe.shape)}")
    if block_tables.dim() != 2 or block_tables.shape[0] != batch:
        raise ValueError(f"block_tables must be [B={batch}, max_blocks], got {tuple(block_tables.shape)}")
    num_heads = q_nope.shape[1]
    out = torch.empty_like(q_nope)
    if batch == 0 or num_heads == 0:
        return out
    q_nope, q_pe, block_tables = _unit_stride(q_nope), _unit_stride(q_pe), _unit_stride(block_tables)
    mid_out = torch.empty(batch, num_heads, NUM_KV_SPLITS, latent, dtype=torch.float32, device=q_nope.device)
    mid_lse = torch.empty(batch, num_heads, NUM_KV_SPLITS, dtype=torch.float32, device=q_nope.device)
    block_l = _dot_size(latent)
    grid = (batch, triton.cdiv(num_heads, DECODE_BLOCK_H), NUM_KV_SPLITS)
    _mla_decode_stage1_kernel[grid](
        q_nope, q_pe, kv_c_cache, k_pe_cache, block_tables, seq_lens.contiguous(), mid_out, mid_lse, scale,
        num_heads, latent, rope, q_nope.stride(0), q_nope.stride(1), q_pe.stride(0), q_pe.stride(1),
        kv_c_cache.stride(0), kv_c_cache.stride(1), k_pe_cache.stride(0), k_pe_cache.stride(1),
        block_tables.stride(0), kv_c_cache.shape[1],
        BLOCK_H=DECODE_BLOCK_H, BLOCK_L=block_l, BLOCK_R=_dot_size(rope), BLOCK_N=DECODE_BLOCK_N,
        NUM_SPLITS=NUM_KV_SPLITS, **_decode_launch_options())
    _mla_decode_stage2_kernel[(batch, num_heads)](
        mid_out, mid_lse, out, num_heads, latent, out.stride(0), out.stride(1),
        BLOCK_L=triton.next_power_of_2(latent), NUM_SPLITS=NUM_KV_SPLITS,
        BLOCK_S=triton.next_power_of_2(NUM_KV_SPLITS))
    return out


def _decode_launch_options() -> dict[str, int]:
    """``num_warps`` / ``num_stages`` of the stage-1 kernel: 4 warps (as vLLM) and one stage. Compiled by Triton
    3.7.1 (``benchmarks/triton_compile.py``) at L=512, R=64, BLOCK_N 16, fp32 dots: sm_80/sm_90 need 208-226
    registers (fp32 caches) or 146-154 (bf16) and 72 KB of shared memory, gfx942 256 VGPRs, no spills anywhere.
    8 warps would halve the NVIDIA registers (80-113) but spill 54-132 bytes on gfx942; BLOCK_N 32 or two
    stages spill on every target (vLLM's BLOCK_N 32 and 2 stages feed bf16 to tensor cores; this dots in fp32)."""
    return {"num_warps": 4, "num_stages": 1}


# -- the expanded prefill --------------------------------------------------------------------------

@triton.jit
def _mla_prefill_kernel(q_ptr, k_ptr, v_ptr, out_ptr, query_start_loc_ptr, kv_start_loc_ptr, scale, num_seqs,
                        qk_dim, v_dim, q_stride_t, q_stride_h, k_stride_t, k_stride_h, v_stride_t, v_stride_h,
                        o_stride_t, o_stride_h,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_DQK: tl.constexpr, BLOCK_DV: tl.constexpr):
    """Program ``(query block, head)``: ``BLOCK_M`` queries of one request (blocks placed as in
    ``attention._paged_attention_kernel``), online softmax over the keys each may see."""
    q_block_idx = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    seq = _find_seq_idx(query_start_loc_ptr, q_block_idx, num_seqs, BLOCK_M)
    q_start = tl.load(query_start_loc_ptr + seq)
    q_len = tl.load(query_start_loc_ptr + seq + 1) - q_start
    q_block_local = q_block_idx - (q_start // BLOCK_M + seq)
    if q_block_local * BLOCK_M >= q_len:  # surplus program: this request has fewer query blocks
        return
    kv_start = tl.load(kv_start_loc_ptr + seq)
    kv_len = tl.load(kv_start_loc_ptr + seq + 1) - kv_start
    context_len = kv_len - q_len                                     # keys before this request's first query

    offs_m = q_block_local * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_qk = tl.arange(0, BLOCK_DQK)
    offs_v = tl.arange(0, BLOCK_DV)
    m_mask = offs_m < q_len
    qk_mask = offs_qk < qk_dim
    v_mask = offs_v < v_dim
    q_rows = (q_start + offs_m).to(tl.int64)
    q = tl.load(q_ptr + q_rows[:, None] * q_stride_t + head * q_stride_h + offs_qk[None, :],
                mask=m_mask[:, None] & qk_mask[None, :], other=0.0).to(tl.float32)

    kv_end = tl.minimum(kv_len, context_len + (q_block_local + 1) * BLOCK_M)   # the block's last query sees < kv_end
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for start in range(0, kv_end, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_mask = offs_n < kv_end
        kv_rows = (kv_start + offs_n).to(tl.int64)
        k = tl.load(k_ptr + kv_rows[:, None] * k_stride_t + head * k_stride_h + offs_qk[None, :],
                    mask=n_mask[:, None] & qk_mask[None, :], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + kv_rows[:, None] * v_stride_t + head * v_stride_h + offs_v[None, :],
                    mask=n_mask[:, None] & v_mask[None, :], other=0.0).to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale                 # [BLOCK_M, BLOCK_N]
        visible = (offs_n[None, :] <= context_len + offs_m[:, None]) & n_mask[None, :]
        s = tl.where(visible, s, float("-inf"))
        m_i, l_i, acc = _online_softmax_step(s, v, m_i, l_i, acc)

    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(out_ptr + q_rows[:, None] * o_stride_t + head * o_stride_h + offs_v[None, :],
             out.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & v_mask[None, :])


def mla_prefill_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          query_start_loc: torch.Tensor, kv_start_loc: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal attention over contiguous per-request K/V with ``Dqk != Dv``: ``[T, nh, Dv]`` (see
    ``mini_platform.ops``). Shapes are checked; the start locations are read on the device only."""
    if query.dim() != 3 or key.dim() != 3 or value.dim() != 3 or key.shape[:2] != value.shape[:2] or \
            key.shape[1:] != query.shape[1:]:
        raise ValueError(f"need query [T, nh, Dqk], key [S, nh, Dqk] and value [S, nh, Dv], got "
                         f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}")
    if query_start_loc.dim() != 1 or query_start_loc.shape != kv_start_loc.shape or not query_start_loc.numel():
        raise ValueError(f"query_start_loc and kv_start_loc must both be [B+1], got {tuple(query_start_loc.shape)} "
                         f"and {tuple(kv_start_loc.shape)}")
    num_tokens, num_heads, qk_dim = query.shape
    v_dim = value.shape[2]
    num_seqs = query_start_loc.shape[0] - 1
    out = query.new_zeros(num_tokens, num_heads, v_dim)
    if num_tokens == 0 or num_seqs == 0 or num_heads == 0:
        return out
    query, key, value = _unit_stride(query), _unit_stride(key), _unit_stride(value)
    grid = (num_tokens // PREFILL_BLOCK_M + num_seqs, num_heads)
    _mla_prefill_kernel[grid](
        query, key, value, out, query_start_loc.contiguous(), kv_start_loc.contiguous(), scale, num_seqs,
        qk_dim, v_dim, query.stride(0), query.stride(1), key.stride(0), key.stride(1), value.stride(0),
        value.stride(1), out.stride(0), out.stride(1),
        BLOCK_M=PREFILL_BLOCK_M, BLOCK_N=PREFILL_BLOCK_N, BLOCK_DQK=_dot_size(qk_dim), BLOCK_DV=_dot_size(v_dim),
        num_warps=4, num_stages=1)
    return out
