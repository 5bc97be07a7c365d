"""Emulated torch_npu paged-attention ops: the KV write, ATB paged decode and FIA (``npu_fused_infer_attention_score``).

Written from the documented semantics, not from ``mini_platform.ops.cpu.attention`` (the tests
compare the two, so they must be independent). Sources:

- op-plugin ``op_plugin/ops/atb/ReshapeAndCachAtb.cpp`` and ``PagedAttentionAtb.cpp`` (signatures, the same as the
  schemas the torch-npu 2.13.0 wheel registers in ``libop_plugin_atb.so``;
  ATB ``PagedAttention``: ``maskType=UNDEFINED``, ``inputLayout=BSND``, block size a multiple of 16, at most 128);
- the FIA documentation in torch-npu 2.13.0 (``torch_npu/_op_plugin_docs.py``) (as op-plugin's
  ``docs/context/torch_npu-npu_fused_infer_attention_score.md``): TND needs ``actual_seq_lengths``, "每个元素的值
  表示当前Batch与之前所有Batch的seqlen和" (cumulative); with PageAttention (``block_table``, the cache as
  ``(blocknum, blocksize, H)``) ``actual_seq_lengths_kv`` "代表每个Batch的实际长度" (per request); "sparse_mode为3时,
  代表rightDownCausal模式的mask", "需要传入优化后的atten_mask矩阵(2048*2048)"; mask value 1 = masked;
  ``softmax_lse`` is ``(T, N, 1)`` fp32, and "softmax_lse_flag为False时, 则输出shape为[1]的值为0的Tensor". That
  wheel's meta function gives shape ``[0]`` there instead; the emulation follows the documentation (the engine
  never reads it);
- vllm-ascend ``attention/attention_v1.py`` for how the ops are called.

Deviation: the real kernels take fp16/bf16 activations; the emulation also accepts fp32 so that
fp32 reference runs can go through it. Everything is computed in fp32 and returned in the query's
dtype. Emulation note: verified against an emulation of torch_npu semantics; not run on Ascend hardware here.
"""
from __future__ import annotations

import torch

__all__ = ["_npu_reshape_and_cache", "_npu_paged_attention", "_npu_paged_attention_get_workspace",
           "npu_fused_infer_attention_score"]

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_MASK_SIZE = 2048


def _check_dtype(t: torch.Tensor, op: str, what: str) -> None:
    if t.dtype not in _DTYPES:
        raise TypeError(f"{op}: {what} dtype {t.dtype} is not supported (float16, bfloat16; float32 in the emulation)")


def _check_block_table(block_table: torch.Tensor, batch: int, op: str) -> None:
    if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != batch:
        raise ValueError(f"{op}: block_table must be int32 [batch={batch}, max_blocks], got "
                         f"{block_table.dtype} {tuple(block_table.shape)}")


def _request_kv(cache: torch.Tensor, block_table_row: torch.Tensor, length: int) -> torch.Tensor:
    """Tokens ``0..length-1`` of one request from a paged cache ``(blocks, block_size, ...)``, token by token."""
    block_size = cache.shape[1]
    if not 0 <= length <= block_table_row.shape[0] * block_size:
        raise ValueError(f"KV length {length} is negative or exceeds the block table's capacity "
                         f"({block_table_row.shape[0]} blocks x {block_size})")
    positions = torch.arange(length)
    blocks = block_table_row.long()[positions // block_size]
    return cache[blocks, positions % block_size]


def _softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
                       masked: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(scale * q k^T, masked -> excluded) v`` per head; q ``[S, N, D]``, k/v ``[L, Nkv, D]``.

    Returns ``(out [S, N, D], lse [S, N])`` in fp32. A query row with every key masked gives zeros.
    """
    n, n_kv = q.shape[1], k.shape[1]
    kv_head = torch.arange(n) * n_kv // n              # GQA: query head h reads kv head h // (N / Nkv)
    scores = scale * torch.einsum("snd,lnd->nsl", q.float(), k.float()[:, kv_head])
    if masked is not None:
        scores = scores.masked_fill(masked, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)                                     # [N, S]
    probs = torch.exp(scores - lse[..., None]).nan_to_num(0.0)               # rows all masked -> 0
    out = torch.einsum("nsl,lnd->snd", probs, v.float()[:, kv_head])
    return out, lse.transpose(0, 1)


def _npu_reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor,
                           value_cache: torch.Tensor, slot_indices: torch.Tensor) -> None:
    """ATB ReshapeAndCache: ``key_cache[s // bs, s % bs] = key[t]`` for ``s = slot_indices[t]`` (same for value).

    key/value ``[T, Nkv, D]``; caches ``[blocks, block_size, Nkv, D]``; ``slot_indices`` int32 ``[T]``. The head
    dims of key and value may differ: vllm-ascend (v0.9.1 ``mla_v1.py``, v0.11.0 ``torchair/torchair_mla.py``)
    writes MLA's latent (key, 512) and rotary key (value, 64) this way; the ATB page is not quoted here.
    Slots < 0 (vLLM's padding) are skipped: vllm-ascend slices them off before calling, so this
    emulation treats them as "not written" rather than as an error.
    """
    op = "_npu_reshape_and_cache"
    if slot_indices.dtype != torch.int32 or slot_indices.shape != key.shape[:1]:
        raise ValueError(f"{op}: slot_indices must be int32 [T={key.shape[0]}], got {slot_indices.dtype} "
                         f"{tuple(slot_indices.shape)}")
    if key.dim() != 3 or value.dim() != 3 or value.shape[:2] != key.shape[:2] or key_cache.dim() != 4 \
            or value_cache.shape[:3] != key_cache.shape[:3] or key_cache.shape[2:] != key.shape[1:] \
            or value_cache.shape[2:] != value.shape[1:]:
        raise ValueError(f"{op}: need key/value [T, Nkv, Dk/Dv] and caches [blocks, block_size, Nkv, Dk/Dv]; got "
                         f"{tuple(key.shape)}, {tuple(value.shape)}, {tuple(key_cache.shape)}, "
                         f"{tuple(value_cache.shape)}")
    num_slots = key_cache.shape[0] * key_cache.shape[1]
    slots = slot_indices.long()
    written = slots >= 0
    if bool((slots >= num_slots).any()):
        raise ValueError(f"{op}: slot {int(slots.max())} is outside the cache ({num_slots} slots)")
    slots = slots[written]
    key_cache.view(num_slots, *key_cache.shape[2:])[slots] = key[written].to(key_cache.dtype)
    value_cache.view(num_slots, *value_cache.shape[2:])[slots] = value[written].to(value_cache.dtype)


def _npu_paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor, num_kv_heads: int,
                         num_heads: int, scale_value: float, block_table: torch.Tensor, context_lens: torch.Tensor,
                         out: torch.Tensor, *, workspace: torch.Tensor | None = None) -> None:
    """ATB PagedAttention (decode, no mask): ``out[b] = softmax(scale * q_b K_b^T) V_b``.

    query/out ``[B, N, D]`` (one token per sequence); caches ``[blocks, block_size, Nkv, D]``;
    ``block_table`` int32 ``[B, max_blocks]``; ``context_lens`` int32 ``[B]`` = KV length of each
    sequence including the current token (its K/V already written). Writes ``out`` in place.
    """
    op = "_npu_paged_attention"
    _check_dtype(query, op, "query")
    batch = query.shape[0]
    if query.dim() != 3 or query.shape[1] != num_heads or out.shape != query.shape:
        raise ValueError(f"{op}: query and out must be [B, num_heads={num_heads}, D], got "
                         f"{tuple(query.shape)} and {tuple(out.shape)}")
    if key_cache.dim() != 4 or key_cache.shape != value_cache.shape or key_cache.shape[2] != num_kv_heads \
            or key_cache.shape[3] != query.shape[2]:
        raise ValueError(f"{op}: caches must be [blocks, block_size, num_kv_heads={num_kv_heads}, D={query.shape[2]}], "
                         f"got {tuple(key_cache.shape)} and {tuple(value_cache.shape)}")
    block_size = key_cache.shape[1]
    if block_size % 16 or block_size > 128:
        raise ValueError(f"{op}: ATB paged attention needs block_size a multiple of 16 and at most 128, "
                         f"got {block_size}")
    if num_kv_heads < 1 or num_heads % num_kv_heads:
        raise ValueError(f"{op}: num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})")
    _check_block_table(block_table, batch, op)
    if context_lens.dtype != torch.int32 or context_lens.shape != (batch,):
        raise ValueError(f"{op}: context_lens must be int32 [B={batch}], got {context_lens.dtype} "
                         f"{tuple(context_lens.shape)}")
    for b, length in enumerate(context_lens.tolist()):
        k = _request_kv(key_cache, block_table[b], length)
        v = _request_kv(value_cache, block_table[b], length)
        result, _ = _softmax_attention(query[b:b + 1], k, v, scale_value, None)
        out[b] = result[0].to(out.dtype)


def _npu_paged_attention_get_workspace(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                                       num_kv_heads: int, num_heads: int, scale_value: float, block_table: torch.Tensor,
                                       context_lens: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The scratch buffer ``_npu_paged_attention(..., workspace=)`` needs for these arguments (vllm-ascend
    v0.11.0 sizes it once per capture size). The emulated kernel needs none: an empty byte tensor."""
    return torch.empty(0, dtype=torch.uint8, device=query.device)


def _right_down_causal(q_len: int, kv_len: int) -> torch.Tensor:
    """sparse_mode 3: the causal triangle aligned to the bottom-right corner; True = masked.

    Query ``i`` of ``q_len`` is the token at KV position ``kv_len - q_len + i`` and sees keys up to it.
    """
    q_pos = kv_len - q_len + torch.arange(q_len)[:, None]
    return torch.arange(kv_len)[None, :] > q_pos


def _check_compressed_mask(atten_mask: torch.Tensor | None) -> None:
    if atten_mask is None or tuple(atten_mask.shape) != (_MASK_SIZE, _MASK_SIZE):
        raise ValueError("npu_fused_infer_attention_score: sparse_mode=3 needs the optimised "
                         f"({_MASK_SIZE}, {_MASK_SIZE}) atten_mask, triu(ones, diagonal=1), got "
                         f"{None if atten_mask is None else tuple(atten_mask.shape)}")
    if atten_mask.dtype not in (torch.bool, torch.int8, torch.uint8):
        raise TypeError(f"npu_fused_infer_attention_score: atten_mask dtype must be bool, int8 or uint8, "
                        f"got {atten_mask.dtype}")
    corner = atten_mask[:64, :64].bool()  # spot check of the pattern (1 = masked, strictly above the diagonal)
    if not torch.equal(corner, torch.ones(64, 64, dtype=torch.bool).triu(1)):
        raise ValueError("npu_fused_infer_attention_score: sparse_mode=3 expects atten_mask = "
                         "triu(ones(2048, 2048), 1) with 1 = masked")


_DEFAULTS = {"pre_tokens": 2147483647, "next_tokens": 2147483647, "inner_precise": 0, "antiquant_mode": 0,
             "key_antiquant_mode": 0, "value_antiquant_mode": 0}


def npu_fused_infer_attention_score(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *,
                                    atten_mask: torch.Tensor | None = None,
                                    actual_seq_lengths: list[int] | None = None,
                                    actual_seq_lengths_kv: list[int] | None = None,
                                    block_table: torch.Tensor | None = None, query_rope: torch.Tensor | None = None,
                                    key_rope: torch.Tensor | None = None, num_heads: int = 1, scale: float = 1.0,
                                    input_layout: str = "BSH", num_key_value_heads: int = 0, sparse_mode: int = 0,
                                    block_size: int = 0, softmax_lse_flag: bool = False,
                                    **other: object) -> tuple[torch.Tensor, torch.Tensor]:
    """FIA in the subset vllm-ascend uses: ``input_layout="TND"``, with or without PageAttention.

    - ``query`` ``[T, N, D]``; request ``b`` owns rows ``actual_seq_lengths[b-1]:actual_seq_lengths[b]``
      (cumulative ends; the list length is the batch).
    - With ``block_table`` (int32 ``[B, >=max_blocks]``): key/value are the paged caches viewed as
      ``(blocks, block_size, Nkv*D)``; ``actual_seq_lengths_kv[b]`` is request ``b``'s KV length (per request).
    - Without it: key/value are ``[T_kv, Nkv, D]`` packed like the query and ``actual_seq_lengths_kv``
      is cumulative too.
    - ``sparse_mode=0`` without a mask: no masking. ``sparse_mode=3``: rightDownCausal, the query block
      aligned to the end of the KV (query ``i`` sees keys ``<= kv_len - q_len + i``), with the 2048x2048 mask.

    - The MLA form (``query_rope``/``key_rope`` given) is :func:`_mla_decode`.

    Returns ``(attention_out [T, N, D] in query's dtype, softmax_lse)``: lse fp32 ``[T, N, 1]`` when
    ``softmax_lse_flag`` else a one-element zero tensor. Anything else raises ``NotImplementedError``.
    """
    op = "npu_fused_infer_attention_score"
    unsupported = sorted(k for k, v in other.items() if v is not None and _DEFAULTS.get(k, None) != v)
    if unsupported:
        raise NotImplementedError(f"{op}: the emulation does not support {unsupported} (only the TND paged/unpaged "
                                  f"causal path and the MLA decode vllm-ascend uses)")
    if query_rope is not None or key_rope is not None:
        return _mla_decode(query, key, value, query_rope, key_rope, atten_mask, actual_seq_lengths,
                           actual_seq_lengths_kv, block_table, num_heads, scale, input_layout, num_key_value_heads,
                           sparse_mode, block_size, softmax_lse_flag)
    if input_layout != "TND":
        raise NotImplementedError(f"{op}: the emulation supports input_layout='TND' only, got {input_layout!r}")
    if sparse_mode == 0 and atten_mask is not None or sparse_mode not in (0, 3):
        raise NotImplementedError(f"{op}: with TND only sparse_mode=0 without a mask or sparse_mode=3 with the "
                                  f"2048x2048 mask are supported (the documented TND constraint), got "
                                  f"sparse_mode={sparse_mode} with{'out' if atten_mask is None else ''} a mask")
    if sparse_mode == 3:
        _check_compressed_mask(atten_mask)
    _check_dtype(query, op, "query")
    n_kv = num_key_value_heads or num_heads
    if query.dim() != 3 or query.shape[1] != num_heads or num_heads % n_kv:
        raise ValueError(f"{op}: query must be [T, num_heads={num_heads}, D] with num_heads a multiple of "
                         f"num_key_value_heads={n_kv}, got {tuple(query.shape)}")
    if actual_seq_lengths is None or actual_seq_lengths_kv is None \
            or len(actual_seq_lengths) != len(actual_seq_lengths_kv):
        raise ValueError(f"{op}: TND needs actual_seq_lengths and actual_seq_lengths_kv, one entry per request")
    q_ends = list(actual_seq_lengths)
    if any(b < a for a, b in zip([0] + q_ends, q_ends)) or (q_ends and q_ends[-1] > query.shape[0]):
        raise ValueError(f"{op}: actual_seq_lengths must be cumulative (non-decreasing) and end at most at T="
                         f"{query.shape[0]}, got {q_ends}")
    head_dim = query.shape[2]

    if block_table is not None:
        if key.dim() != 3 or key.shape != value.shape or key.shape[2] != n_kv * head_dim or key.shape[1] != block_size:
            raise ValueError(f"{op}: with block_table, key/value must be paged caches (blocks, "
                             f"block_size={block_size}, Nkv*D={n_kv * head_dim}), got {tuple(key.shape)} and "
                             f"{tuple(value.shape)}")
        _check_block_table(block_table, len(q_ends), op)
        key, value = (c.view(c.shape[0], block_size, n_kv, head_dim) for c in (key, value))
        kv_lens = list(actual_seq_lengths_kv)
    else:
        if key.dim() != 3 or key.shape != value.shape or key.shape[1:] != (n_kv, head_dim):
            raise ValueError(f"{op}: without block_table, key/value must be [T_kv, Nkv={n_kv}, D={head_dim}], "
                             f"got {tuple(key.shape)} and {tuple(value.shape)}")
        kv_ends = list(actual_seq_lengths_kv)
        kv_lens = [b - a for a, b in zip([0] + kv_ends, kv_ends)]
        if min(kv_lens, default=0) < 0 or (kv_ends and kv_ends[-1] > key.shape[0]):
            raise ValueError(f"{op}: without block_table actual_seq_lengths_kv is cumulative, ending at most at "
                             f"T_kv={key.shape[0]}; got {kv_ends}")

    out = torch.zeros(query.shape, dtype=torch.float32)
    lse = torch.zeros(query.shape[:2], dtype=torch.float32)
    q_start = kv_start = 0
    for b, (q_end, kv_len) in enumerate(zip(q_ends, kv_lens)):
        q = query[q_start:q_end]
        if block_table is not None:
            k, v = _request_kv(key, block_table[b], kv_len), _request_kv(value, block_table[b], kv_len)
        else:
            k, v = key[kv_start:kv_start + kv_len], value[kv_start:kv_start + kv_len]
            kv_start += kv_len
        if sparse_mode == 3 and q.shape[0] > kv_len:
            raise ValueError(f"{op}: request {b} has {q.shape[0]} queries but only {kv_len} keys; rightDownCausal "
                             f"needs q_len <= kv_len")
        masked = _right_down_causal(q.shape[0], kv_len) if sparse_mode == 3 else None
        if q.shape[0] and kv_len:
            out[q_start:q_end], lse[q_start:q_end] = _softmax_attention(q, k, v, scale, masked)
        q_start = q_end
    softmax_lse = lse[..., None] if softmax_lse_flag else torch.zeros(1, dtype=torch.float32)
    return out.to(query.dtype), softmax_lse


def _mla_decode(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, query_rope: torch.Tensor | None,
                key_rope: torch.Tensor | None, atten_mask: torch.Tensor | None, actual_seq_lengths: list[int] | None,
                actual_seq_lengths_kv: list[int] | None, block_table: torch.Tensor | None, num_heads: int,
                scale: float, input_layout: str, num_key_value_heads: int, sparse_mode: int, block_size: int,
                softmax_lse_flag: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """FIA's MLA form as vllm-ascend v0.11.0 ``mla_v1.py _forward_decode`` calls it (no NZ cache, no speculation):
    ``input_layout="BNSD"``, query ``[B, N, 1, D]`` and ``query_rope`` ``[B, N, 1, Dr]``; ``key`` = ``value`` the
    latent cache viewed ``(blocknum, KV_N=1, blocksize, D)`` and ``key_rope`` ``(blocknum, 1, blocksize, Dr)``,
    paged by ``block_table``; ``actual_seq_lengths_kv[b]`` = request ``b``'s KV length; ``sparse_mode=0``, no mask.

    ``out[b, h] = softmax(scale * (q[b, h] . K_b + q_rope[b, h] . K_rope_b)) V_b`` (document: "query_rope: Tensor类型,
    表示MLA(Multi-head Latent Attention)结构中的query的rope信息"). The document's limits (query D 512, rope D 64,
    N in 32/64/128, block_size a multiple of 128) are not enforced, so tiny shapes run here. A KV length of 0 gives
    zeros in the emulation; the document does not say what the op does then.
    """
    op = "npu_fused_infer_attention_score"
    if query_rope is None or key_rope is None:
        raise ValueError(f"{op}: query_rope and key_rope must be given together")
    if input_layout != "BNSD" or sparse_mode != 0 or atten_mask is not None or actual_seq_lengths is not None \
            or block_table is None:
        raise NotImplementedError(f"{op}: the emulated MLA form is BNSD paged decode with sparse_mode=0, no mask and "
                                  f"no actual_seq_lengths (got {input_layout!r}, sparse_mode={sparse_mode})")
    for name, t in (("query", query), ("query_rope", query_rope), ("key", key), ("key_rope", key_rope)):
        _check_dtype(t, op, name)
        if t.dim() != 4:
            raise ValueError(f"{op}: {name} must be 4-D in BNSD, got {tuple(t.shape)}")
    batch = query.shape[0]
    if query.shape[1] != num_heads or query.shape[2] != 1 or query_rope.shape[:3] != query.shape[:3]:
        raise NotImplementedError(f"{op}: the emulated MLA form takes query [B, num_heads={num_heads}, 1, D] and "
                                  f"query_rope [B, N, 1, Dr], got {tuple(query.shape)} and {tuple(query_rope.shape)}")
    if num_key_value_heads != 1 or key.shape[1] != 1 or key.shape[2] != block_size or value.shape != key.shape \
            or key_rope.shape[:3] != key.shape[:3] or key.shape[3] != query.shape[3] \
            or key_rope.shape[3] != query_rope.shape[3]:
        raise ValueError(f"{op}: MLA needs num_key_value_heads=1 and key = value (blocks, 1, block_size={block_size}, "
                         f"D), key_rope (blocks, 1, block_size, Dr); got key {tuple(key.shape)}, value "
                         f"{tuple(value.shape)}, key_rope {tuple(key_rope.shape)}")
    _check_block_table(block_table, batch, op)
    kv_lens = list(actual_seq_lengths_kv or [])
    if len(kv_lens) != batch:
        raise ValueError(f"{op}: actual_seq_lengths_kv needs one KV length per request ({batch}), got {kv_lens}")
    latent, rope = (c.transpose(1, 2) for c in (key, key_rope))          # (blocks, block_size, 1, D)
    out = torch.zeros(query.shape, dtype=torch.float32)
    lse = torch.zeros(batch, num_heads, 1, 1, dtype=torch.float32)
    for b, kv_len in enumerate(kv_lens):
        if not kv_len:
            continue
        c = _request_kv(latent, block_table[b], kv_len)[:, 0].float()   # [L, D]
        pe = _request_kv(rope, block_table[b], kv_len)[:, 0].float()    # [L, Dr]
        scores = scale * (query[b, :, 0].float() @ c.T + query_rope[b, :, 0].float() @ pe.T)   # [N, L]
        lse[b, :, 0, 0] = torch.logsumexp(scores, dim=-1)
        out[b, :, 0] = torch.softmax(scores, dim=-1) @ _request_kv(value.transpose(1, 2), block_table[b],
                                                                    kv_len)[:, 0].float()
    softmax_lse = lse if softmax_lse_flag else torch.zeros(1, dtype=torch.float32)
    return out.to(query.dtype), softmax_lse
