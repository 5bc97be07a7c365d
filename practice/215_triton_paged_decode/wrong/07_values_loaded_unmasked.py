# Mistake: Masks the keys and the scores past seq_len but loads the values with the head-dim mask only; the unwritten slots' values (NaN in a torch.empty cache) enter acc as 0 * NaN.
"""Exercise 215: paged decode attention as a Triton kernel (solution)."""
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
    q = tl.load(q_ptr + seq * q_stride_b + head * q_stride_h + offs_d, mask=d_mask, other=0.0).to(tl.float32)
    m = float("-inf")
    l = 0.0
    acc = tl.zeros([HEAD_DIM], tl.float32)
    for j in range(0, tl.cdiv(seq_len, BLOCK_SIZE)):
        block = tl.load(block_tables_ptr + seq * bt_stride + j).to(tl.int64)
        s_mask = j * BLOCK_SIZE + offs_s < seq_len
        off = block * c_stride_b + offs_s[:, None] * c_stride_s + kv_head * c_stride_h + offs_d[None, :]
        kv_mask = s_mask[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + off, mask=kv_mask, other=0.0).to(tl.float32)
        v = tl.load(v_cache_ptr + off, mask=d_mask[None, :], other=0.0).to(tl.float32)
        s = tl.where(s_mask, tl.sum(q[None, :] * k, axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(out_ptr + seq * q_stride_b + head * q_stride_h + offs_d, (acc / l).to(out_ptr.dtype.element_ty),
             mask=d_mask)


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
