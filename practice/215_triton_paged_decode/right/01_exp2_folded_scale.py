# Correct: exp2 with the scale and log2(e) folded into the query, the block count as an integer ceil-division, V loaded after the scores, tl.full scalars for the running max and sum.
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _decode_kernel(q_ptr, k_cache_ptr, v_cache_ptr, out_ptr, block_tables_ptr, seq_lens_ptr, scale,
                   head_dim, q_per_kv, q_stride_b, q_stride_h, c_stride_b, c_stride_s, c_stride_h, bt_stride,
                   BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    kv_head = head // q_per_kv
    offs_d = tl.arange(0, HEAD_DIM)
    offs_s = tl.arange(0, BLOCK_SIZE)
    d_mask = offs_d < head_dim
    seq_len = tl.load(seq_lens_ptr + seq)
    LOG2E: tl.constexpr = 1.4426950408889634
    q = tl.load(q_ptr + seq * q_stride_b + head * q_stride_h + offs_d, mask=d_mask, other=0.0)
    q = q.to(tl.float32) * (scale * LOG2E)           # scores in base 2: exp(x) == exp2(x * log2(e))
    m_i = tl.full([], float("-inf"), tl.float32)
    l_i = tl.full([], 0.0, tl.float32)
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    num_blocks = (seq_len + BLOCK_SIZE - 1) // BLOCK_SIZE
    for j in range(num_blocks):
        block = tl.load(block_tables_ptr + seq * bt_stride + j).to(tl.int64)
        pos = j * BLOCK_SIZE + offs_s
        valid = pos < seq_len
        base = block * c_stride_b + kv_head * c_stride_h
        ptrs = base + offs_s[:, None] * c_stride_s + offs_d[None, :]
        mask2 = valid[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + ptrs, mask=mask2, other=0.0).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1)
        s = tl.where(valid, s, float("-inf"))
        m_next = tl.maximum(m_i, tl.max(s, axis=0))
        correction = tl.exp2(m_i - m_next)
        p = tl.exp2(s - m_next)
        v = tl.load(v_cache_ptr + ptrs, mask=mask2, other=0.0).to(tl.float32)
        acc = acc * correction + tl.sum(v * p[:, None], axis=0)
        l_i = l_i * correction + tl.sum(p, axis=0)
        m_i = m_next
    out = acc / l_i
    tl.store(out_ptr + seq * q_stride_b + head * q_stride_h + offs_d, out.to(out_ptr.dtype.element_ty), mask=d_mask)


def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """query [B, nh, hd]; caches [nb, bs, nkv, hd] (contiguous); block_tables int32 [B, max_blocks]."""
    B, num_heads, head_dim = query.shape
    num_kv_heads, block_size = key_cache.shape[2], key_cache.shape[1]
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads {num_heads} is not a multiple of num_kv_heads {num_kv_heads}")
    query, key_cache, value_cache = query.contiguous(), key_cache.contiguous(), value_cache.contiguous()
    block_tables = block_tables.contiguous()
    out = torch.zeros_like(query)
    _decode_kernel[(B, num_heads)](
        query, key_cache, value_cache, out, block_tables, seq_lens, scale, head_dim, num_heads // num_kv_heads,
        query.stride(0), query.stride(1), key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
        block_tables.stride(0), BLOCK_SIZE=block_size, HEAD_DIM=triton.next_power_of_2(head_dim))
    return out
