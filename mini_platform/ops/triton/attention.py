"""Paged KV cache and paged attention as Triton kernels, in the style of vLLM's unified attention.

``reshape_and_cache``: one program per token copies its ``nkv * hd`` values to its slot.

``paged_attention``: one kernel serves prefills, prefix hits, chunks and decodes. A program owns
``BLOCK_Q`` query tokens of one request and one KV head; its ``BLOCK_M = BLOCK_Q * q_per_kv`` rows
are those tokens times the query heads that share the KV head (GQA packing), so every K/V tile is
loaded once for the whole group. The program walks the request's block table in ``TILE`` tokens,
masks keys after each query's own position (causal, with the cached context in front) and keeps an
online softmax (running max ``M``, running sum ``L``, accumulator ``acc``) in fp32; the dots use
full fp32 precision (``input_precision="ieee"``, not TF32), since the probabilities are fp32. Each request's
query blocks start at ``query_start_loc[b] // BLOCK_Q + b``, so ``T // BLOCK_Q + B`` programs cover
any batch and a program finds its request by binary search, with no host-side metadata. Unlike vLLM,
decode does not split the KV sequence across programs (no segment reduction); it is the same kernel
with one query per request.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..cpu.attention import check_attention_args

TILE = 16  # KV tokens per inner-loop step; need not divide the block size (each key finds its own block)


@triton.jit
def _reshape_and_cache_kernel(key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_ptr,
                              k_stride_t, k_stride_h, v_stride_t, v_stride_h,
                              c_stride_b, c_stride_s, c_stride_h, block_size, num_kv_heads, head_dim,
                              BLOCK: tl.constexpr):
    t = tl.program_id(0)
    slot = tl.load(slot_ptr + t).to(tl.int64)
    if slot < 0:  # padding
        return
    offs = tl.arange(0, BLOCK)
    head, d = offs // head_dim, offs % head_dim
    mask = offs < num_kv_heads * head_dim
    dst = (slot // block_size) * c_stride_b + (slot % block_size) * c_stride_s + head * c_stride_h + d
    k = tl.load(key_ptr + t * k_stride_t + head * k_stride_h + d, mask=mask)
    v = tl.load(value_ptr + t * v_stride_t + head * v_stride_h + d, mask=mask)
    tl.store(key_cache_ptr + dst, k.to(key_cache_ptr.dtype.element_ty), mask=mask)
    tl.store(value_cache_ptr + dst, v.to(value_cache_ptr.dtype.element_ty), mask=mask)


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                      slot_mapping: torch.Tensor) -> None:
    """Write ``key``/``value`` ``[T, nkv, hd]`` to their slots in the caches ``[nb, bs, nkv, hd]``; skip slots < 0."""
    if key.shape != value.shape or key.dim() != 3 or slot_mapping.shape != key.shape[:1]:
        raise ValueError(f"need key and value [T, num_kv_heads, head_dim] and slot_mapping [T]; got "
                         f"{tuple(key.shape)}, {tuple(value.shape)} and {tuple(slot_mapping.shape)}")
    if key_cache.shape != value_cache.shape or key_cache.shape[2:] != key.shape[1:] or not key_cache.is_contiguous() \
            or not value_cache.is_contiguous():
        raise ValueError(f"caches {tuple(key_cache.shape)} / {tuple(value_cache.shape)} must be contiguous "
                         f"[num_blocks, block_size, {key.shape[1]}, {key.shape[2]}]")
    if key.shape[0] == 0:
        return
    key = key if key.stride(-1) == 1 else key.contiguous()
    value = value if value.stride(-1) == 1 else value.contiguous()
    _, block_size, nkv, hd = key_cache.shape
    _reshape_and_cache_kernel[(key.shape[0],)](
        key, value, key_cache, value_cache, slot_mapping.contiguous(),  # the kernel reads slot t at slot_ptr + t
        key.stride(0), key.stride(1), value.stride(0), value.stride(1),
        key_cache.stride(0), key_cache.stride(1), key_cache.stride(2), block_size, nkv, hd,
        BLOCK=triton.next_power_of_2(nkv * hd))


@triton.jit
def _find_seq_idx(query_start_loc_ptr, q_block_idx, num_seqs, BLOCK_Q: tl.constexpr):
    """The request ``b`` with ``qsl[b] // BLOCK_Q + b <= q_block_idx`` (the last such), by binary search."""
    lo = 0
    hi = num_seqs
    while lo < hi:
        mid = (lo + hi) // 2
        if tl.load(query_start_loc_ptr + mid) // BLOCK_Q + mid <= q_block_idx:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@triton.jit
def _online_softmax_step(s, v, m_i, l_i, acc):
    """One key tile of flash attention: scores ``s`` ``[M, N]`` (masked keys at -inf), values ``v`` ``[N, D]``;
    returns the running max, sum and unnormalised output. Rows that see no key yet stay at zero."""
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    p = tl.exp(s - m_safe[:, None])
    alpha = tl.exp(m_i - m_safe)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    return m_new, l_i, acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")


@triton.jit
def _paged_attention_kernel(q_ptr, k_cache_ptr, v_cache_ptr, out_ptr, block_tables_ptr, query_start_loc_ptr,
                            seq_lens_ptr, scale, num_seqs, head_dim,
                            q_stride_t, q_stride_h, o_stride_t, o_stride_h, c_stride_b, c_stride_s, c_stride_h,
                            bt_stride, block_size,
                            Q_PER_KV: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_M: tl.constexpr,
                            HEAD_DIM: tl.constexpr, TILE_N: tl.constexpr):
    q_block_idx = tl.program_id(0)
    kv_head = tl.program_id(1)
    seq = _find_seq_idx(query_start_loc_ptr, q_block_idx, num_seqs, BLOCK_Q)
    q_start = tl.load(query_start_loc_ptr + seq)
    q_len = tl.load(query_start_loc_ptr + seq + 1) - q_start
    q_block_local = q_block_idx - (q_start // BLOCK_Q + seq)
    if q_block_local * BLOCK_Q >= q_len:  # surplus program: this request has fewer query blocks
        return

    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_pos = q_block_local * BLOCK_Q + offs_m // Q_PER_KV          # query index inside the request
    head = kv_head * Q_PER_KV + offs_m % Q_PER_KV
    row_mask = (offs_m < BLOCK_Q * Q_PER_KV) & (q_pos < q_len)
    d_mask = offs_d < head_dim
    q_off = (q_start + q_pos)[:, None] * q_stride_t + head[:, None] * q_stride_h + offs_d[None, :]
    q = tl.load(q_ptr + q_off, mask=row_mask[:, None] & d_mask[None, :], other=0.0).to(tl.float32)

    seq_len = tl.load(seq_lens_ptr + seq)
    context_len = seq_len - q_len                                  # tokens cached before this step's queries
    kv_end = tl.minimum(seq_len, context_len + (q_block_local + 1) * BLOCK_Q)  # last query of the block sees < kv_end

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start in range(0, kv_end, TILE_N):
        offs_n = start + tl.arange(0, TILE_N)
        n_mask = offs_n < kv_end
        block = tl.load(block_tables_ptr + seq * bt_stride + offs_n // block_size, mask=n_mask, other=0).to(tl.int64)
        kv_off = block[:, None] * c_stride_b + (offs_n % block_size)[:, None] * c_stride_s \
            + kv_head * c_stride_h + offs_d[None, :]
        kv_mask = n_mask[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + kv_off, mask=kv_mask, other=0.0).to(tl.float32)
        v = tl.load(v_cache_ptr + kv_off, mask=kv_mask, other=0.0).to(tl.float32)

        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale   # [BLOCK_M, TILE_N]
        visible = (offs_n[None, :] <= context_len + q_pos[:, None]) & n_mask[None, :] & row_mask[:, None]
        s = tl.where(visible, s, float("-inf"))
        m_i, l_i, acc = _online_softmax_step(s, v, m_i, l_i, acc)

    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    o_off = (q_start + q_pos)[:, None] * o_stride_t + head[:, None] * o_stride_h + offs_d[None, :]
    tl.store(out_ptr + o_off, out.to(out_ptr.dtype.element_ty), mask=row_mask[:, None] & d_mask[None, :])


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, query_start_loc: torch.Tensor, seq_lens: torch.Tensor,
                    scale: float) -> torch.Tensor:
    """Causal attention for a packed mixed batch (see ``mini_platform.ops.paged_attention``)."""
    check_attention_args(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens)
    if not (key_cache.is_contiguous() and value_cache.is_contiguous()):
        raise ValueError("the Triton paged attention needs contiguous key/value caches")
    num_tokens, num_heads, head_dim = query.shape
    num_kv_heads, block_size = key_cache.shape[2], key_cache.shape[1]
    q_per_kv = num_heads // num_kv_heads
    block_m = max(16, triton.next_power_of_2(q_per_kv))          # tl.dot wants >= 16 rows
    block_q = block_m // q_per_kv
    num_seqs = seq_lens.shape[0]
    out = torch.zeros_like(query)
    if num_tokens == 0 or num_seqs == 0:
        return out
    query = query if query.stride(-1) == 1 else query.contiguous()
    block_tables = block_tables if block_tables.stride(-1) == 1 else block_tables.contiguous()
    grid = (num_tokens // block_q + num_seqs, num_kv_heads)
    # tl.arange needs a power of two, and tl.dot a K of at least 16: the compiler rejects K = 8, the
    # interpreter computes it (tests/test_triton_compile.py shows both)
    padded_head_dim = max(16, triton.next_power_of_2(head_dim))
    _paged_attention_kernel[grid](  # query_start_loc and seq_lens are read at ptr + index: make them dense
        query, key_cache, value_cache, out, block_tables, query_start_loc.contiguous(), seq_lens.contiguous(), scale,
        num_seqs, head_dim,
        query.stride(0), query.stride(1), out.stride(0), out.stride(1),
        key_cache.stride(0), key_cache.stride(1), key_cache.stride(2), block_tables.stride(0), block_size,
        Q_PER_KV=q_per_kv, BLOCK_Q=block_q, BLOCK_M=block_m, HEAD_DIM=padded_head_dim, TILE_N=TILE,
        **_launch_options(padded_head_dim))
    return out


def _launch_options(padded_head_dim: int) -> dict[str, int]:
    """``num_warps`` / ``num_stages`` of the attention kernel. Compiled by Triton 3.7.1 for sm_80/sm_90
    (``benchmarks/triton_compile.py``), the default 3-stage software pipeline of the gathered K/V loads takes
    255 registers and spills about 340 bytes per thread at HEAD_DIM 128 (4,600 at 256); with one stage it
    needs 64-71 registers (24-32 resident warps per SM) and spills nothing. At HEAD_DIM 256 one stage still
    needs 96-108 registers at 4 warps, 64 at 8 (HEAD_DIM 256 is not in the recorded table: compiled by hand)."""
    return {"num_warps": 8 if padded_head_dim > 128 else 4, "num_stages": 1}


def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """One query per sequence: the unified kernel with ``query_start_loc = 0, 1, ..., B``."""
    check_attention_args(query, key_cache, value_cache, block_tables, None, seq_lens)
    query_start_loc = torch.arange(query.shape[0] + 1, dtype=torch.int32, device=query.device)
    return paged_attention(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, scale)
