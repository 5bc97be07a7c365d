"""Paged KV cache and paged attention in plain torch: the specification of the attention kernels.

The cache of one layer is two tensors, key and value, each ``[num_blocks, block_size, nkv, hd]``
(the layout vllm-ascend uses, so one layout serves every backend). Token ``t`` of a request lives in
slot ``block_table[t // block_size] * block_size + t % block_size``.

Two versions of paged attention, equal up to float rounding:

- :func:`paged_attention_reference` loops over requests, gathers each one's K/V into a dense tensor
  and attends: the readable specification every other version is tested against;
- :func:`paged_attention`, the ``cpu`` kernel the engine runs, does the same for all requests at once:
  it gathers K/V by block table into a padded batch and runs one masked ``scaled_dot_product_attention``
  (decode requests and prompt requests in separate batches, so a long prompt does not pad every decode).
  Decode batches in fp32 or bf16 go to the numba-compiled kernel of :mod:`.compiled` instead when numba is installed.

Both read lengths on the host, which a graph cannot hold (see :mod:`mini_platform.ops.graph`). While a
graph is being captured, the two decode-step kernels take a fixed-shape form instead, with no host reads:
:func:`static_reshape_and_cache` and :func:`static_paged_decode_attention`.
"""
from __future__ import annotations

import functools
from typing import Sequence

import torch
import torch.nn.functional as F

from ..graph import is_capturing
from . import compiled


def check_cache_args(key_cache: torch.Tensor, value_cache: torch.Tensor, num_heads: int, head_dim: int) -> None:
    """Shapes every backend relies on: K/V caches ``[nb, bs, nkv, hd]`` with ``num_heads % nkv == 0``."""
    if key_cache.dim() != 4 or key_cache.shape != value_cache.shape:
        raise ValueError(f"key_cache and value_cache must both be [num_blocks, block_size, num_kv_heads, head_dim], "
                         f"got {tuple(key_cache.shape)} and {tuple(value_cache.shape)}")
    nkv, hd = key_cache.shape[2:]
    if hd != head_dim:
        raise ValueError(f"query head_dim {head_dim} does not match the cache's head_dim {hd}")
    if num_heads % nkv:
        raise ValueError(f"num_heads ({num_heads}) must be a multiple of the cache's num_kv_heads ({nkv})")


def check_attention_args(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                         block_tables: torch.Tensor, query_start_loc: torch.Tensor | None, seq_lens: torch.Tensor) -> None:
    """Shape checks shared by the backends (no device-to-host copies, so they are cheap everywhere).
    ``query_start_loc`` None: a decode batch, one query per request."""
    if query.dim() != 3:
        raise ValueError(f"query must be [num_tokens, num_heads, head_dim], got shape {tuple(query.shape)}")
    check_cache_args(key_cache, value_cache, query.shape[1], query.shape[2])
    num_seqs = seq_lens.shape[0]
    if seq_lens.dim() != 1 or block_tables.dim() != 2 or block_tables.shape[0] != num_seqs:
        raise ValueError(f"need seq_lens [B] and block_tables [B, max_blocks]; got {tuple(seq_lens.shape)} and "
                         f"{tuple(block_tables.shape)}")
    if query_start_loc is None:
        if query.shape[0] != num_seqs:
            raise ValueError(f"decode query must be [B, num_heads, head_dim] with B = len(seq_lens) = {num_seqs}, "
                             f"got {tuple(query.shape)}")
    elif query_start_loc.shape != (num_seqs + 1,):
        raise ValueError(f"query_start_loc must be [B+1] = [{num_seqs + 1}] (cumulative query lengths starting at 0), "
                         f"got {tuple(query_start_loc.shape)}")
    for name, t in (("block_tables", block_tables), ("query_start_loc", query_start_loc), ("seq_lens", seq_lens)):
        if t is not None and t.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"{name} must be an integer tensor (int32), got {t.dtype}")


def _check_values(query: torch.Tensor, block_size: int, block_tables: torch.Tensor,
                  query_start_loc: Sequence[int], seq_lens: list[int]) -> None:
    if query_start_loc[0] != 0 or query_start_loc[-1] > query.shape[0]:
        raise ValueError(f"query_start_loc must start at 0 and end at most at num_tokens={query.shape[0]}, "
                         f"got {query_start_loc}")
    capacity = block_tables.shape[1] * block_size
    bounds = zip(query_start_loc, query_start_loc[1:], seq_lens)
    if all(0 <= end - start <= seq_len <= capacity for start, end, seq_len in bounds):
        return
    for b, seq_len in enumerate(seq_lens):  # name the first bad request
        q_len = query_start_loc[b + 1] - query_start_loc[b]
        if not 0 <= q_len <= seq_len <= capacity:
            raise ValueError(f"request {b}: need 0 <= query length ({q_len}) <= seq_len ({seq_len}) <= "
                             f"max_blocks * block_size ({capacity})")


def gather_kv(cache: torch.Tensor, block_table_row: torch.Tensor, length: int) -> torch.Tensor:
    """The first ``length`` cached tokens of one request, ``[length, nkv, hd]``, in token order."""
    block_size = cache.shape[1]
    num_blocks = -(-length // block_size)
    return cache[block_table_row[:num_blocks].long()].flatten(0, 1)[:length]


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                      slot_mapping: torch.Tensor) -> None:
    """Write ``key``/``value`` ``[T, nkv, hd]`` to ``slot_mapping`` (``block * bs + offset``); skip slots < 0."""
    if key.shape != value.shape or key.dim() != 3 or slot_mapping.shape != key.shape[:1]:
        raise ValueError(f"need key and value [T, num_kv_heads, head_dim] and slot_mapping [T]; got "
                         f"{tuple(key.shape)}, {tuple(value.shape)} and {tuple(slot_mapping.shape)}")
    if key_cache.shape != value_cache.shape or key_cache.shape[2:] != key.shape[1:]:
        raise ValueError(f"caches {tuple(key_cache.shape)} / {tuple(value_cache.shape)} must be "
                         f"[num_blocks, block_size, {key.shape[1]}, {key.shape[2]}] to hold key {tuple(key.shape)}")
    num_slots = key_cache.shape[0] * key_cache.shape[1]
    if not slot_mapping.numel():
        return
    if compiled.available_widened(key, value, key_cache, value_cache) and \
            compiled.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
        return   # fp32 or bf16 with numba: checked and written in one call (in a CPU graph, one node)
    if is_capturing():   # no host reads: the slots cannot be checked before a replay
        return static_reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)
    low, high = (int(x) for x in slot_mapping.aminmax())
    if high >= num_slots:
        raise ValueError(f"slot {high} is outside the cache ({key_cache.shape[0]} blocks x {key_cache.shape[1]} slots)")
    slots = slot_mapping.long()
    if low < 0:
        keep = slots >= 0
        slots, key, value = slots[keep], key[keep], value[keep]
    for new, cache in ((key, key_cache), (value, value_cache)):
        # Slot s is row s of the cache seen as [num_slots, nkv, hd] (a view: writes land in the cache).
        cache.view(num_slots, *cache.shape[2:]).index_copy_(0, slots, new.to(cache.dtype))


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, first_visible: int) -> torch.Tensor:
    """Causal attention of ``q`` ``[n, nh, hd]`` over ``k``/``v`` ``[L, nkv, hd]`` in fp32.

    Query ``i`` sees keys ``0 .. first_visible + i`` (its own position is ``first_visible + i``).
    """
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)              # [L, nh, hd]: head h reads kv head h // group
    v = v.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q.float(), k) * scale
    q_pos = first_visible + torch.arange(q.shape[0])[:, None]
    scores = scores.masked_fill(torch.arange(k.shape[0])[None, :] > q_pos, float("-inf"))
    return torch.einsum("hqk,khd->qhd", scores.softmax(dim=-1), v)


def paged_attention_reference(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                              block_tables: torch.Tensor, query_start_loc: torch.Tensor, seq_lens: torch.Tensor,
                              scale: float) -> torch.Tensor:
    """Causal attention for a packed mixed batch (see ``mini_platform.ops.paged_attention``), one request
    at a time: the specification."""
    check_attention_args(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens)
    starts, lens = query_start_loc.tolist(), seq_lens.tolist()
    _check_values(query, key_cache.shape[1], block_tables, starts, lens)
    out = torch.zeros_like(query)
    for b, seq_len in enumerate(lens):
        q = query[starts[b]:starts[b + 1]]
        if q.shape[0] == 0:
            continue
        k = gather_kv(key_cache, block_tables[b], seq_len)
        v = gather_kv(value_cache, block_tables[b], seq_len)
        out[starts[b]:starts[b + 1]] = _attend(q, k, v, scale, seq_len - q.shape[0]).to(query.dtype)
    return out


@functools.lru_cache(maxsize=64)
def _arange(n: int, device: torch.device) -> torch.Tensor:
    """``0 .. n-1`` (int32), made once per length: index arithmetic on small steps is dominated by
    per-call overhead. Read only."""
    return torch.arange(n, dtype=torch.int32, device=device)


def _gather_padded(key_cache: torch.Tensor, value_cache: torch.Tensor, block_tables: torch.Tensor,
                   seq_lens: torch.Tensor, max_len: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """K and V of several requests gathered slot by slot into fp32 ``[B, max_len, nkv, hd]``, and the mask
    ``[B, max_len]`` of the positions each request has written (``< seq_len``).

    Positions past a request's ``seq_len`` read its first slot again, never their own: slots never written
    (the rest of its last block) may hold anything, NaN included, which a mask alone lets through, and unused
    block-table entries may not even be block ids. Every request given here has ``seq_len >= 1``.
    """
    block_size, device = key_cache.shape[1], key_cache.device
    num_blocks = -(-max_len // block_size)
    slots = (block_tables[:, :num_blocks, None] * block_size + _arange(block_size, device)).flatten(1)[:, :max_len]
    written = _arange(max_len, device) < seq_lens[:, None]                                    # [B, L]
    slots = torch.where(written, slots, slots[:, :1]).flatten()
    k, v = (cache.flatten(0, 1).index_select(0, slots).unflatten(0, written.shape).float()
            for cache in (key_cache, value_cache))
    return k, v, written


def _attend_decodes(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, seq_lens: torch.Tensor, max_len: int, scale: float,
                    same_length: bool = False) -> torch.Tensor:
    """Requests with one query each (``query`` ``[B, nh, hd]``, the last position): it sees every written key.
    Returns their outputs ``[B, nh, hd]`` in the query's dtype. ``same_length``: every ``seq_len`` is
    ``max_len``, so nothing is masked.

    Grouped-query heads are folded into the query axis: the ``nh // nkv`` heads that share KV head ``h`` become
    ``nh // nkv`` queries against it, so K/V are never repeated per head."""
    k, v, written = _gather_padded(key_cache, value_cache, block_tables, seq_lens, max_len)
    q = query.float().unflatten(1, (k.shape[2], -1))                                # [B, nkv, nh // nkv, hd]
    mask = None if same_length else written[:, None, None]
    result = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask, scale=scale)
    return result.flatten(1, 2).to(query.dtype)


def _decode_batch(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                  block_tables: torch.Tensor, seq_lens: torch.Tensor, max_len: int, scale: float,
                  same_length: bool = False) -> torch.Tensor:
    """A decode batch on the compiled kernel when it can run these inputs (:mod:`.compiled`: no gather, one
    call), else with :func:`_attend_decodes`. Same arguments and result."""
    if compiled.available_widened(query, key_cache, value_cache):
        return compiled.paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, scale)
    return _attend_decodes(query, key_cache, value_cache, block_tables, seq_lens, max_len, scale, same_length)


def _attend_prompts(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, starts: list[int], q_lens: list[int], seq_lens: list[int],
                    scale: float, out: torch.Tensor) -> None:
    """Requests with several queries each, padded to the longest query ``[B, Q, nh, hd]``. Query ``j`` of request
    ``b`` sits at position ``seq_lens[b] - q_lens[b] + j`` and sees the keys up to it; padding rows see key 0 at
    least (no empty softmax) and are dropped."""
    device = query.device
    seq_len = torch.tensor(seq_lens, device=device)
    k, v, _ = _gather_padded(key_cache, value_cache, block_tables, seq_len, max(seq_lens))
    q_len = torch.tensor(q_lens, device=device)
    j = torch.arange(max(q_lens), device=device)
    valid = j[None, :] < q_len[:, None]                      # [B, Q]: real query rows
    rows = (torch.tensor(starts, device=device)[:, None] + j[None, :]).masked_fill(~valid, 0)
    q_pos = seq_len[:, None] - q_len[:, None] + j[None, :]
    visible = torch.arange(k.shape[1], device=device)[None, None, :] <= q_pos[:, :, None]   # [B, Q, L]
    result = F.scaled_dot_product_attention(query[rows].float().transpose(1, 2), k.transpose(1, 2),
                                            v.transpose(1, 2), attn_mask=visible[:, None], scale=scale,
                                            enable_gqa=True)   # [B, nh, Q, hd]
    out[rows[valid]] = result.transpose(1, 2)[valid].to(out.dtype)


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, query_start_loc: torch.Tensor, seq_lens: torch.Tensor,
                    scale: float) -> torch.Tensor:
    """Causal attention for a packed mixed batch (see ``mini_platform.ops.paged_attention``), batched:
    the same result as :func:`paged_attention_reference`, up to float rounding. Decode requests (one query)
    and prompt requests (several) run as two batches, so a long prompt does not pad every decode."""
    check_attention_args(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens)
    starts, lens = query_start_loc.tolist(), seq_lens.tolist()
    _check_values(query, key_cache.shape[1], block_tables, starts, lens)
    q_lens = [end - start for start, end in zip(starts, starts[1:])]
    decodes = [b for b, n in enumerate(q_lens) if n == 1]
    if lens and len(decodes) == len(lens) == query.shape[0]:  # pure decode, no padding rows: row b is request b
        return _decode_batch(query, key_cache, value_cache, block_tables, seq_lens, max(lens), scale,
                             same_length=min(lens) == max(lens))
    out = torch.zeros_like(query)
    if decodes:
        rows = torch.tensor([starts[b] for b in decodes], device=query.device)
        out[rows] = _decode_batch(query[rows], key_cache, value_cache, block_tables[decodes],
                                  torch.tensor([lens[b] for b in decodes], device=query.device),
                                  max(lens[b] for b in decodes), scale)
    prompts = [b for b, n in enumerate(q_lens) if n > 1]
    if prompts:
        _attend_prompts(query, key_cache, value_cache, block_tables[prompts], [starts[b] for b in prompts],
                        [q_lens[b] for b in prompts], [lens[b] for b in prompts], scale, out)
    return out


def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """One query per sequence: the mixed-batch case where every request has exactly one query token
    (checked as :func:`paged_attention` checks it, then run as one decode batch). While a CPU graph captures, nothing
    may read the lengths on the host: the compiled kernel (one node of the graph, which checks the lengths and block ids
    at each replay) or else the fixed-shape form, :func:`static_paged_decode_attention`."""
    check_attention_args(query, key_cache, value_cache, block_tables, None, seq_lens)
    if is_capturing():
        if compiled.available_widened(query, key_cache, value_cache):
            return compiled.paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, scale)
        return static_paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, scale)
    lens = seq_lens.tolist()
    if not lens:
        return torch.zeros_like(query)
    shortest, longest = min(lens), max(lens)
    if shortest < 1 or longest > block_tables.shape[1] * key_cache.shape[1]:
        _check_values(query, key_cache.shape[1], block_tables, range(len(lens) + 1), lens)  # names the request
    return _decode_batch(query, key_cache, value_cache, block_tables, seq_lens, longest, scale,
                         same_length=shortest == longest)


# -- fixed-shape forms for graph capture ------------------------------------------------------------------

def static_reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor,
                             value_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """:func:`reshape_and_cache` without host reads (no value checks): :func:`write_slots` for K and V."""
    write_slots(key, key_cache, slot_mapping)
    write_slots(value, value_cache, slot_mapping)


def write_slots(new: torch.Tensor, cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """Row ``i`` of ``new`` ``[T, ...]`` to slot ``slot_mapping[i]`` of ``cache`` ``[nb, bs, ...]``, without host
    reads. Padding rows (slot < 0) must come after the real ones: they rewrite what row 0 writes (or, when every
    row is padding, slot 0's own content), so every write is exact whatever the order of duplicate indices."""
    flat = cache.view(cache.shape[0] * cache.shape[1], *cache.shape[2:])
    slots = slot_mapping.long()
    keep = slots >= 0
    target = slots[:1].clamp(min=0)  # where padding rows write: row 0's slot when row 0 is real
    fill = torch.where(keep[0], new[0].to(cache.dtype), flat.index_select(0, target)[0])
    rows = torch.where(keep.view(-1, *[1] * (new.dim() - 1)), new.to(cache.dtype), fill)
    flat.index_copy_(0, torch.where(keep, slots, target), rows)


def static_paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                                  block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """:func:`paged_decode_attention` over every block of each block table row, keys at positions
    ``>= seq_lens[b]`` masked: the same numbers, fixed shapes, no host reads. A row with length 0
    (padding) gives zeros."""
    check_cache_args(key_cache, value_cache, query.shape[1], query.shape[2])
    batch, width = block_tables.shape
    group = query.shape[1] // key_cache.shape[2]
    k = key_cache[block_tables.long()].flatten(1, 2).float().repeat_interleave(group, dim=2)  # [B, L, nh, hd]
    v = value_cache[block_tables.long()].flatten(1, 2).float().repeat_interleave(group, dim=2)
    hidden = torch.arange(k.shape[1], device=query.device)[None, :] >= seq_lens[:, None]
    # Slots past a length may never have been written (the cache starts uninitialised): zero them, so that
    # a NaN there cannot leak through 0 * NaN.
    k, v = (t.masked_fill(hidden[:, :, None, None], 0.0) for t in (k, v))
    scores = torch.einsum("bhd,blhd->bhl", query.float(), k) * scale
    scores = scores.masked_fill(hidden[:, None, :], float("-inf"))
    probs = scores.softmax(dim=-1).nan_to_num(0.0)  # all keys masked (padding) -> zeros
    return torch.einsum("bhl,blhd->bhd", probs, v).to(query.dtype)
