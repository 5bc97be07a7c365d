"""Exercise 215: paged decode attention as a Triton kernel. Complete _decode_kernel; keep the names."""
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
    # TODO 1: q = this head's query vector, fp32 (q_ptr + seq * q_stride_b + head * q_stride_h + offs_d)
    # TODO 2: for j in range(0, tl.cdiv(seq_len, BLOCK_SIZE)): block id from the block table, then keys at
    #         k_cache_ptr + block * c_stride_b + offs_s[:, None] * c_stride_s + kv_head * c_stride_h + offs_d[None, :]
    # TODO 3: online softmax (m, l, acc), masking positions >= seq_len (in the K and the V loads too: unwritten
    #         slots may hold NaN)
    # TODO 4: store acc / l at out_ptr + seq * q_stride_b + head * q_stride_h + offs_d
    pass


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
