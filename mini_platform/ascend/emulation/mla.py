"""Emulated torch_npu ops of DeepSeek's multi-head latent attention (MLA): the interleaved rope, the fused
RMSNorm + rope + latent-cache write, and two ATB ops of ``torch_npu.atb`` (paged cache load, ring MLA).

Sources: argument names, defaults and output shapes from the torch-npu 2.13.0 wheel (codegen yaml, meta functions,
the ATB schemas in ``libop_plugin_atb.so``; tests/test_torch_npu_wheel.py compares them); semantics from
Ascend/op-plugin 517f2e7d ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_interleave_rope.md`` and
``torch_npu-npu_kv_rmsnorm_rope_cache.md`` (the 2.13.0 ``_op_plugin_docs.py`` has no text for either), and the
wheel's ``torch_npu/op_plugin/atb/_atb_api_docs.py`` for the ATB ops.

The rope of both fused ops is DeepSeek's: the pairs ``(x[2i], x[2i+1])`` are first de-interleaved
(``reshape(..., D/2, 2).transpose(-1, -2)``), then rotated with ``RotateHalf`` against cos/sin laid out in halves
(``cat(freqs, freqs)``). The result stays in the de-interleaved order: element ``i < D/2`` is the rotated
``x[2i]``, element ``D/2 + i`` the rotated ``x[2i+1]``. This is a fixed permutation of the interleaved rope
(vLLM's ``is_neox_style=False``); attention scores do not change when q and k share it.

Where the emulation is more lenient than the documents: float32 inputs are accepted (the documents list float16
and bfloat16), and ``npu_ring_mla`` takes any head dims (its document gives 128 and 64). What the documents
leave undefined raises ``ValueError``/``NotImplementedError`` rather than guess.
Emulation note: verified against an emulation of torch_npu semantics; not run on Ascend hardware here.
"""
from __future__ import annotations

import torch

__all__ = ["npu_interleave_rope", "npu_kv_rmsnorm_rope_cache"]
__atb__ = ["npu_paged_cache_load", "npu_ring_mla"]      # ops of torch_npu.atb

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_ROPE_DIM = 64           # npu_interleave_rope: "输入x、cos、sin的D维度均必须等于64"
_RMS_DIM = 512           # npu_kv_rmsnorm_rope_cache: rms_size "取值仅支持512", rope_size "取值仅支持64"
_RING_MASK = 512         # npu_ring_mla: mask "shape为[512, 512]"


def _check_dtype(op: str, name: str, t: torch.Tensor) -> None:
    if t.dtype not in _DTYPES:
        raise TypeError(f"{op}: {name} dtype {t.dtype} is not supported (float16, bfloat16; float32 in the emulation)")


def _deinterleaved_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``q = reshape(x, [..., D/2, 2]).transpose(-1, -2).reshape([..., D])``; ``q * cos + RotateHalf(q) * sin`` in fp32."""
    q = x.float().unflatten(-1, (-1, 2)).transpose(-1, -2).flatten(-2)
    q1, q2 = q.chunk(2, dim=-1)
    return q * cos.float() + torch.cat((-q2, q1), dim=-1) * sin.float()


def npu_interleave_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """DeepSeek's rope on ``x`` ``[B, N, S, 64]`` (see the module docstring); ``cos``/``sin`` ``[B, 1, S or 1, 64]``
    in halves. Returns ``x``'s shape and dtype, in the de-interleaved order."""
    op = "npu_interleave_rope"
    _check_dtype(op, "x", x)
    if x.dim() != 4 or cos.dim() != 4 or cos.shape != sin.shape:
        raise ValueError(f"{op}: x must be [B, N, S, D] and cos/sin [B, 1, S or 1, D] alike, got {tuple(x.shape)}, "
                         f"{tuple(cos.shape)}, {tuple(sin.shape)}")
    if x.shape[-1] != _ROPE_DIM or cos.shape[-1] != _ROPE_DIM:
        raise ValueError(f"{op}: the D of x, cos and sin must be {_ROPE_DIM}, got {x.shape[-1]} and {cos.shape[-1]}")
    if cos.shape[0] != x.shape[0] or cos.shape[1] != 1 or cos.shape[2] not in (1, x.shape[2]):
        raise ValueError(f"{op}: cos/sin must be [B={x.shape[0]}, 1, 1 or S={x.shape[2]}, D], got {tuple(cos.shape)}")
    return _deinterleaved_rope(x, cos, sin).to(x.dtype)


def npu_kv_rmsnorm_rope_cache(kv: torch.Tensor, gamma: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                              index: torch.Tensor, k_cache: torch.Tensor, ckv_cache: torch.Tensor, *,
                              k_rope_scale: torch.Tensor | None = None, c_kv_scale: torch.Tensor | None = None,
                              k_rope_offset: torch.Tensor | None = None, c_kv_offset: torch.Tensor | None = None,
                              v: torch.Tensor | None = None, epsilon: float = 1e-05, cache_mode: str = "Norm",
                              is_output_kv: bool = False
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Split ``kv`` ``[B, 1, S, 576]`` into ``c`` (512) and ``k_pe`` (64); ``y = RMSNorm(c) * gamma``;
    ``k_embed`` = DeepSeek's rope of ``k_pe`` (de-interleaved order); write token ``t`` to global slot
    ``index[t]`` of ``ckv_cache`` / ``k_cache`` ``[blocks, block_size, 1, 512 / 64]`` (cache_mode ``PA`` or
    ``PA_BNSD``). Returns ``(k_cache, ckv_cache, k_embed [B, 1, S, 64], y [B, 1, S, 512])``, the caches updated in
    place; the last two are documented only for ``is_output_kv=True`` (the emulation always fills them).

    Not emulated: quantisation (the scales), ``v`` (absent from the document), the ``Norm``, NZ and block modes.
    The document calls repeated index values undefined; it does not define negative ones: both raise here.
    """
    op = "npu_kv_rmsnorm_rope_cache"
    if any(t is not None for t in (k_rope_scale, c_kv_scale, k_rope_offset, c_kv_offset, v)):
        raise NotImplementedError(f"{op}: quantisation scales/offsets and v are not emulated")
    if cache_mode not in ("PA", "PA_BNSD"):
        raise NotImplementedError(f"{op}: cache_mode {cache_mode!r} is not emulated (only 'PA' and 'PA_BNSD')")
    _check_dtype(op, "kv", kv)
    if kv.dim() != 4 or kv.shape[1] != 1 or kv.shape[3] != _RMS_DIM + _ROPE_DIM or tuple(gamma.shape) != (_RMS_DIM,):
        raise ValueError(f"{op}: kv must be [B, 1, S, {_RMS_DIM + _ROPE_DIM}] and gamma [{_RMS_DIM}], got "
                         f"{tuple(kv.shape)} and {tuple(gamma.shape)}")
    if cos.shape != (*kv.shape[:3], _ROPE_DIM) or sin.shape != cos.shape:
        raise ValueError(f"{op}: cos and sin must be [B, 1, S, {_ROPE_DIM}], got {tuple(cos.shape)}, {tuple(sin.shape)}")
    num_tokens = kv.shape[0] * kv.shape[2]
    if index.dtype != torch.int64 or index.shape != (num_tokens,):
        raise ValueError(f"{op}: index must be int64 [B*S={num_tokens}] in PA mode, got {index.dtype} "
                         f"{tuple(index.shape)}")
    if k_cache.dim() != 4 or k_cache.shape[2:] != (1, _ROPE_DIM) or ckv_cache.shape != (*k_cache.shape[:2], 1, _RMS_DIM):
        raise ValueError(f"{op}: k_cache / ckv_cache must be [blocks, block_size, 1, {_ROPE_DIM} / {_RMS_DIM}], got "
                         f"{tuple(k_cache.shape)} and {tuple(ckv_cache.shape)}")
    slots = index.long()
    num_slots = k_cache.shape[0] * k_cache.shape[1]
    if num_tokens and (int(slots.min()) < 0 or int(slots.max()) >= num_slots or slots.unique().numel() != num_tokens):
        raise ValueError(f"{op}: index values must be distinct slots in [0, {num_slots}), got {index.tolist()}")
    c, k_pe = kv.float().split([_RMS_DIM, _ROPE_DIM], dim=-1)
    y = (c * torch.rsqrt(c.pow(2).mean(dim=-1, keepdim=True) + epsilon) * gamma.float()).to(kv.dtype)
    k_embed = _deinterleaved_rope(k_pe, cos, sin).to(kv.dtype)
    ckv_cache.view(num_slots, _RMS_DIM)[slots] = y.reshape(num_tokens, _RMS_DIM).to(ckv_cache.dtype)
    k_cache.view(num_slots, _ROPE_DIM)[slots] = k_embed.reshape(num_tokens, _ROPE_DIM).to(k_cache.dtype)
    return k_cache, ckv_cache, k_embed, y


def npu_paged_cache_load(key_cache: torch.Tensor, value_cache: torch.Tensor, block_table: torch.Tensor,
                         context_lens: torch.Tensor, *, seq_starts: torch.Tensor | None = None, cumsum: bool = False,
                         key: torch.Tensor | None = None, value: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """ATB PagedCacheLoad: batch ``b``'s tokens ``seq_starts[b] + [0, len_b)`` of its block-table row, read from
    ``key_cache`` / ``value_cache`` ``[blocks, block_size, N, D]`` and laid end to end as ``[sum(len), N, D]``.

    ``context_lens`` int32 ``[B]`` (lengths) or ``[B+1]`` (``cumsum=True``: running sums); ``seq_starts`` int32 ``[B]``,
    each batch's start in its block table (vllm-ascend v0.11.0 passes token offsets; without it the emulation starts
    at 0, a default the document does not state). With ``key``/``value`` (the ``.out`` overload) the rows go there.
    """
    op = "npu_paged_cache_load"
    for name, t in (("block_table", block_table), ("context_lens", context_lens)) + (
            (("seq_starts", seq_starts),) if seq_starts is not None else ()):
        if t.dtype != torch.int32:
            raise TypeError(f"{op}: {name} must be int32, got {t.dtype}")
    if key_cache.dim() != 4 or value_cache.dim() != 4 or key_cache.shape[:3] != value_cache.shape[:3]:
        raise ValueError(f"{op}: caches must be [blocks, block_size, N, D] alike, got {tuple(key_cache.shape)} and "
                         f"{tuple(value_cache.shape)}")
    for name, cache in (("key_cache", key_cache), ("value_cache", value_cache)):
        if cache.shape[2] * cache.shape[3] * cache.element_size() % 32:
            raise ValueError(f"{op}: {name}'s num_heads*head_size must be 32-byte aligned, got {tuple(cache.shape)} "
                             f"{cache.dtype}")
    lens = context_lens.tolist()
    if cumsum:
        lens = [b - a for a, b in zip(lens, lens[1:])]
    batch = len(lens)
    starts = [0] * batch if seq_starts is None else seq_starts.tolist()
    if block_table.dim() != 2 or block_table.shape[0] != batch or len(starts) != batch:
        raise ValueError(f"{op}: block_table must be [B={batch}, max_blocks] and seq_starts [B], got "
                         f"{tuple(block_table.shape)} and {len(starts)} starts")
    block_size, capacity = key_cache.shape[1], block_table.shape[1] * key_cache.shape[1]
    positions, rows = [], []
    for b, (start, n) in enumerate(zip(starts, lens)):
        if n < 0 or start < 0 or start + n > capacity:
            raise ValueError(f"{op}: batch {b} reads tokens [{start}, {start + n}) beyond its block table ({capacity})")
        positions.append(torch.arange(start, start + n))
        rows.append(torch.full((n,), b))
    positions, rows = torch.cat(positions) if positions else torch.zeros(0, dtype=torch.long), \
        torch.cat(rows) if rows else torch.zeros(0, dtype=torch.long)
    flat = block_table.long()[rows, positions // block_size] * block_size + positions % block_size
    loaded = [cache.flatten(0, 1).index_select(0, flat) for cache in (key_cache, value_cache)]
    outs = (key, value)
    if (key is None) != (value is None):
        raise ValueError(f"{op}: give both key and value (the .out overload) or neither")
    if key is None:
        return loaded[0], loaded[1]
    for name, out, rows_read in (("key", key, loaded[0]), ("value", value, loaded[1])):
        if out.shape != rows_read.shape:
            raise ValueError(f"{op}: {name} must be {tuple(rows_read.shape)}, got {tuple(out.shape)}")
        out.copy_(rows_read)
    return outs


def _check_ring_mask(op: str, mask: torch.Tensor) -> None:
    """The 512x512 mask, strictly upper triangle set (1, or a large negative value for float16 as vllm-ascend builds it)."""
    if tuple(mask.shape) != (_RING_MASK, _RING_MASK):
        raise ValueError(f"{op}: mask must be [{_RING_MASK}, {_RING_MASK}], got {tuple(mask.shape)}")
    corner = mask[:64, :64] != 0
    if not torch.equal(corner, torch.ones(64, 64, dtype=torch.bool, device=mask.device).triu(1)):
        raise ValueError(f"{op}: mask_type_triu expects the mask set strictly above the diagonal")


def npu_ring_mla(q_nope: torch.Tensor, q_rope: torch.Tensor, k_nope: torch.Tensor, k_rope: torch.Tensor,
                 value: torch.Tensor, mask: torch.Tensor, seqlen: torch.Tensor, head_num: int, kv_head_num: int, *,
                 pre_out: torch.Tensor | None = None, prev_lse: torch.Tensor | None = None, qk_scale: float = 1,
                 kernel_type: str | None = None, mask_type: str | None = None, input_layout: str | None = None,
                 calc_type: str | None = None, output: torch.Tensor | None = None,
                 softmax_lse: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """ATB RingMLA over packed requests (``type_bsnd``): ``scores = qk_scale * (q_nope.k_nope + q_rope.k_rope)``.

    ``seqlen`` ``[B]`` (query and KV lengths equal) or ``[2, B]`` (query lengths, then KV lengths); query heads
    ``h`` read KV head ``h // (head_num / kv_head_num)``. ``mask_type_triu``: causal inside each request (only
    with equal lengths here: the document does not say how the triangle aligns otherwise); ``no_mask``: none.
    ``calc_type_first_ring`` returns this block's ``(out [Tq, N, Dv] in q's dtype, lse [N, Tq] fp32)``;
    ``calc_type_default`` merges it with ``pre_out``/``prev_lse`` (log-sum-exp weights). A request with no keys
    contributes nothing. ``output``/``softmax_lse`` (the ``.out`` overload) receive the results.

    The document requires ``kvSeqLen >= qSeqLen`` or ``kvSeqLen == 0`` per request; vllm-ascend v0.11.0's chunked
    context can pass shorter chunks, and the emulation then computes plain attention (not checked on hardware).
    """
    op = "npu_ring_mla"
    if input_layout not in (None, "type_bsnd") or kernel_type not in (None, "kernel_type_default",
                                                                       "kernel_type_high_precision"):
        raise ValueError(f"{op}: input_layout must be type_bsnd and kernel_type default or high precision, got "
                         f"{input_layout!r}, {kernel_type!r}")
    if mask_type not in ("mask_type_triu", "no_mask") or calc_type not in ("calc_type_first_ring", "calc_type_default"):
        raise NotImplementedError(f"{op}: mask_type {mask_type!r} / calc_type {calc_type!r} not emulated")
    for name, t in (("q_nope", q_nope), ("q_rope", q_rope), ("k_nope", k_nope), ("k_rope", k_rope), ("value", value)):
        _check_dtype(op, name, t)
        if t.dim() != 3:
            raise ValueError(f"{op}: {name} must be [tokens, heads, D], got {tuple(t.shape)}")
    if q_rope.shape[:2] != q_nope.shape[:2] or q_nope.shape[1] != head_num or \
            not k_nope.shape[:2] == k_rope.shape[:2] == value.shape[:2] or k_nope.shape[1] != kv_head_num or \
            k_nope.shape[2] != q_nope.shape[2] or k_rope.shape[2] != q_rope.shape[2] or head_num % kv_head_num:
        raise ValueError(f"{op}: inconsistent shapes q_nope {tuple(q_nope.shape)}, q_rope {tuple(q_rope.shape)}, "
                         f"k_nope {tuple(k_nope.shape)}, k_rope {tuple(k_rope.shape)}, value {tuple(value.shape)} "
                         f"for head_num={head_num}, kv_head_num={kv_head_num}")
    if mask_type == "mask_type_triu":
        _check_ring_mask(op, mask)
    lens = seqlen.tolist()
    q_lens, kv_lens = (lens, lens) if seqlen.dim() == 1 else (lens[0], lens[1])
    if sum(q_lens) != q_nope.shape[0] or sum(kv_lens) != k_nope.shape[0] or min(q_lens, default=1) < 1:
        raise ValueError(f"{op}: seqlen {lens} must cover the {q_nope.shape[0]} queries and {k_nope.shape[0]} keys, "
                         f"with no request of 0 queries")
    merge = calc_type == "calc_type_default"
    if merge and (pre_out is None or prev_lse is None):
        raise ValueError(f"{op}: calc_type_default needs pre_out and prev_lse")
    out = torch.zeros(*q_nope.shape[:2], value.shape[2], dtype=torch.float32)
    lse = torch.full((head_num, q_nope.shape[0]), float("-inf"))
    kv_head = torch.arange(head_num) * kv_head_num // head_num
    q_start = kv_start = 0
    for n, s in zip(q_lens, kv_lens):
        if s:
            if mask_type == "mask_type_triu" and n != s:
                raise NotImplementedError(f"{op}: mask_type_triu with {n} queries and {s} keys is not emulated")
            q = slice(q_start, q_start + n)
            k = slice(kv_start, kv_start + s)
            scores = qk_scale * (torch.einsum("qhd,khd->hqk", q_nope[q].float(), k_nope[k].float()[:, kv_head])
                                 + torch.einsum("qhd,khd->hqk", q_rope[q].float(), k_rope[k].float()[:, kv_head]))
            if mask_type == "mask_type_triu":
                scores = scores.masked_fill(torch.ones(n, s, dtype=torch.bool).triu(1), float("-inf"))
            lse[:, q] = torch.logsumexp(scores, dim=-1)
            out[q] = torch.einsum("hqk,khd->qhd", torch.exp(scores - lse[:, q, None]), value[k].float()[:, kv_head])
        q_start, kv_start = q_start + n, kv_start + s
    if merge:
        total = torch.logaddexp(prev_lse.float(), lse)
        weight_prev, weight_new = (torch.exp(part - total).nan_to_num(0.0).transpose(0, 1)[..., None]
                                   for part in (prev_lse.float(), lse))
        out = pre_out.float() * weight_prev + out * weight_new
        lse = total
    result = (out.to(q_nope.dtype), lse)
    if output is None and softmax_lse is None:
        return result
    if output is None or softmax_lse is None:
        raise ValueError(f"{op}: give both output and softmax_lse (the .out overload) or neither")
    output.copy_(result[0])
    softmax_lse.copy_(result[1])
    return output, softmax_lse
