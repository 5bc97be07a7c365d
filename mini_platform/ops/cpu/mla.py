"""Multi-head latent attention (DeepSeek-V2/V3) over a paged latent cache, in plain torch: the specification.

The cache of one MLA layer is two tensors (vllm-ascend's layout): the latent ``kv_c_cache`` ``[nb, bs, 1, L]``
(``L = kv_lora_rank``, the RMS-normed output of ``kv_a_proj_with_mqa``) and the rotary key ``k_pe_cache``
``[nb, bs, 1, R]`` (``R = qk_rope_head_dim``, already rotated). One entry per token, shared by every head.

- :func:`concat_and_cache_mla` writes a step's latents and rotary keys to their slots;
- :func:`mla_decode_attention` is the absorbed decode: the query has ``W_UK`` folded in (``[B, nh, L]``), so
  the scores are ``q_nope . c + q_pe . k_pe`` and the output is a latent ``[B, nh, L]`` (``W_UV`` comes after);
- :func:`gather_mla_cache` reads each request's latents back in token order, for the expanded prefill form;
- :func:`mla_prefill_attention` is causal attention over expanded K/V whose head dims differ (``Dqk != Dv``).

The decode kernels have no host reads, so a decode step can be captured in a graph as it is.
"""
from __future__ import annotations

import torch

from ..graph import is_capturing
from .attention import write_slots


def check_mla_cache_args(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor) -> tuple[int, int]:
    """The latent cache pair every backend relies on; returns ``(L, R)``."""
    if (kv_c_cache.dim() != 4 or k_pe_cache.dim() != 4 or kv_c_cache.shape[:3] != k_pe_cache.shape[:3]
            or kv_c_cache.shape[2] != 1):
        raise ValueError(f"kv_c_cache and k_pe_cache must be [num_blocks, block_size, 1, kv_lora_rank] and "
                         f"[num_blocks, block_size, 1, qk_rope_head_dim], got {tuple(kv_c_cache.shape)} and "
                         f"{tuple(k_pe_cache.shape)}")
    return kv_c_cache.shape[3], k_pe_cache.shape[3]


def concat_and_cache_mla(kv_c: torch.Tensor, k_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """Write ``kv_c`` ``[T, L]`` and ``k_pe`` ``[T, R]`` to ``slot_mapping`` (``block * bs + offset``); skip slots < 0."""
    latent, rope = check_mla_cache_args(kv_c_cache, k_pe_cache)
    if kv_c.dim() != 2 or k_pe.dim() != 2 or kv_c.shape != (kv_c.shape[0], latent) or \
            k_pe.shape != (kv_c.shape[0], rope) or slot_mapping.shape != kv_c.shape[:1]:
        raise ValueError(f"need kv_c [T, {latent}], k_pe [T, {rope}] and slot_mapping [T]; got {tuple(kv_c.shape)}, "
                         f"{tuple(k_pe.shape)} and {tuple(slot_mapping.shape)}")
    if not slot_mapping.numel():
        return
    slots = slot_mapping.long()
    if not is_capturing():
        num_slots = kv_c_cache.shape[0] * kv_c_cache.shape[1]
        high = int(slots.max())
        if high >= num_slots:
            raise ValueError(f"slot {high} is outside the cache ({kv_c_cache.shape[0]} blocks x "
                             f"{kv_c_cache.shape[1]} slots)")
    write_slots(kv_c.unsqueeze(1), kv_c_cache, slots)   # one row per token: the cache's head dim of 1
    write_slots(k_pe.unsqueeze(1), k_pe_cache, slots)


def _padded_latents(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor, block_tables: torch.Tensor,
                    seq_lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every block of each block-table row, as ``[B, S, L]`` and ``[B, S, R]`` fp32 with the slots at or past
    ``seq_lens[b]`` zeroed (they may never have been written), and the ``[B, S]`` mask of those slots."""
    tables = block_tables.long()
    c = kv_c_cache[tables].flatten(1, 2).squeeze(2).float()    # [B, S, L]
    pe = k_pe_cache[tables].flatten(1, 2).squeeze(2).float()   # [B, S, R]
    hidden = torch.arange(c.shape[1], device=c.device)[None, :] >= seq_lens[:, None]
    return c.masked_fill(hidden[..., None], 0.0), pe.masked_fill(hidden[..., None], 0.0), hidden


def mla_decode_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    """Absorbed MLA decode, one query per request: ``[B, nh, L]`` latent outputs (see ``mini_platform.ops``)."""
    latent, rope = check_mla_cache_args(kv_c_cache, k_pe_cache)
    batch = seq_lens.shape[0]
    if q_nope.shape[0] != batch or q_nope.dim() != 3 or q_nope.shape[2] != latent or \
            q_pe.shape != (*q_nope.shape[:2], rope):
        raise ValueError(f"need q_nope [B={batch}, num_heads, {latent}] and q_pe [B, num_heads, {rope}], "
                         f"got {tuple(q_nope.shape)} and {tuple(q_pe.shape)}")
    if block_tables.dim() != 2 or block_tables.shape[0] != batch:
        raise ValueError(f"block_tables must be [B={batch}, max_blocks], got {tuple(block_tables.shape)}")
    if not is_capturing() and batch:
        longest = int(seq_lens.max())
        if longest > block_tables.shape[1] * kv_c_cache.shape[1] or int(seq_lens.min()) < 0:
            raise ValueError(f"seq_lens must be in [0, max_blocks * block_size = "
                             f"{block_tables.shape[1] * kv_c_cache.shape[1]}], got {seq_lens.tolist()}")
    c, pe, hidden = _padded_latents(kv_c_cache, k_pe_cache, block_tables, seq_lens)
    scores = (torch.einsum("bhl,bsl->bhs", q_nope.float(), c)
              + torch.einsum("bhr,bsr->bhs", q_pe.float(), pe)) * scale
    probs = scores.masked_fill(hidden[:, None, :], float("-inf")).softmax(dim=-1).nan_to_num(0.0)
    return torch.einsum("bhs,bsl->bhl", probs, c).to(q_nope.dtype)


def gather_mla_cache(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor, block_tables: torch.Tensor,
                     seq_lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each request's first ``seq_lens[b]`` latents and rotary keys, end to end: ``[S, L]``, ``[S, R]``."""
    check_mla_cache_args(kv_c_cache, k_pe_cache)
    if block_tables.dim() != 2 or seq_lens.dim() != 1 or block_tables.shape[0] != seq_lens.shape[0]:
        raise ValueError(f"need block_tables [B, max_blocks] and seq_lens [B], got {tuple(block_tables.shape)} "
                         f"and {tuple(seq_lens.shape)}")
    block_size = kv_c_cache.shape[1]
    lens = seq_lens.tolist()
    if any(not 0 <= n <= block_tables.shape[1] * block_size for n in lens):
        raise ValueError(f"seq_lens must be in [0, max_blocks * block_size = {block_tables.shape[1] * block_size}], "
                         f"got {lens}")
    slots = torch.cat([torch.arange(n, device=block_tables.device) for n in lens]) if lens else \
        torch.zeros(0, dtype=torch.long, device=block_tables.device)
    rows = torch.repeat_interleave(torch.arange(len(lens), device=block_tables.device),
                                   torch.tensor(lens, device=block_tables.device))
    flat = block_tables.long()[rows, slots // block_size] * block_size + slots % block_size
    return (kv_c_cache.flatten(0, 2).index_select(0, flat), k_pe_cache.flatten(0, 2).index_select(0, flat))


def mla_prefill_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          query_start_loc: torch.Tensor, kv_start_loc: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal attention over contiguous per-request K/V (the expanded MLA prefill): ``[T, nh, Dv]``."""
    if query.dim() != 3 or key.dim() != 3 or value.dim() != 3 or key.shape[:2] != value.shape[:2] or \
            key.shape[1:] != query.shape[1:]:
        raise ValueError(f"need query [T, nh, Dqk], key [S, nh, Dqk] and value [S, nh, Dv], got "
                         f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}")
    if query_start_loc.dim() != 1 or query_start_loc.shape != kv_start_loc.shape:
        raise ValueError(f"query_start_loc and kv_start_loc must both be [B+1], got {tuple(query_start_loc.shape)} "
                         f"and {tuple(kv_start_loc.shape)}")
    q_starts, kv_starts = query_start_loc.tolist(), kv_start_loc.tolist()
    if q_starts[-1] > query.shape[0] or kv_starts[-1] > key.shape[0] or q_starts[0] or kv_starts[0]:
        raise ValueError(f"query_start_loc must run from 0 to at most {query.shape[0]} and kv_start_loc from 0 to "
                         f"at most {key.shape[0]}, got {q_starts} and {kv_starts}")
    out = query.new_zeros(query.shape[0], query.shape[1], value.shape[2])
    for b in range(len(q_starts) - 1):
        q = query[q_starts[b]:q_starts[b + 1]].float().transpose(0, 1)     # [nh, n, D]
        k = key[kv_starts[b]:kv_starts[b + 1]].float().transpose(0, 1)     # [nh, s, D]
        v = value[kv_starts[b]:kv_starts[b + 1]].float().transpose(0, 1)
        n, s = q.shape[1], k.shape[1]
        if n > s:
            raise ValueError(f"request {b}: {n} queries but only {s} keys; its keys include the queries' own")
        if n == 0:
            continue
        visible = torch.arange(s, device=q.device)[None, :] <= torch.arange(s - n, s, device=q.device)[:, None]   # query i sits at s - n + i
        scores = (q @ k.transpose(1, 2) * scale).masked_fill(~visible, float("-inf"))
        out[q_starts[b]:q_starts[b + 1]] = (scores.softmax(dim=-1) @ v).transpose(0, 1).to(query.dtype)
    return out
