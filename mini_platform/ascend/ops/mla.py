"""Multi-head latent attention (DeepSeek-V2/V3) on Ascend, through torch_npu as vllm-ascend v0.11.0 calls it.

The latent cache of a layer is vllm-ascend's: ``kv_c_cache`` ``[nb, bs, 1, L]`` and ``k_pe_cache`` ``[nb, bs, 1, R]``.

- :func:`concat_and_cache_mla`: ``_npu_reshape_and_cache(key=kv_c [T, 1, L], value=k_pe [T, 1, R], ...)``, the
  separate cache write of v0.11.0 ``torchair/torchair_mla.py`` (its ``mla_v1.py`` fuses RMSNorm + rope + write into
  ``npu_kv_rmsnorm_rope_cache``, whose rope leaves k_pe de-interleaved; this contract takes k_pe already rotated).
- :func:`mla_decode_attention`: ``npu_fused_infer_attention_score`` in its MLA form (``mla_v1.py _forward_decode``):
  BNSD, ``query_rope``/``key_rope``, the latent cache as key and value, ``sparse_mode=0``, block table.
- :func:`gather_mla_cache`: ``torch_npu.atb.npu_paged_cache_load`` (``mla_v1.py _compute_prefill_context``).
- :func:`mla_prefill_attention`: ``torch_npu.atb.npu_ring_mla`` twice, as ``_forward_prefill`` and
  ``_compute_prefill_context`` do: the new tokens causally (``calc_type_first_ring``), then the cached context
  without a mask, merged through the log-sum-exp (``calc_type_default``).

vllm-ascend captures the MLA decode in an ACL graph and updates the FIA task per replay with the step's KV lengths;
this engine's ACL graph updates only paged attention, so :func:`mla_decode_attention` refuses capture with a
``GraphCaptureError`` and the engine runs such a model eagerly, with a warning. torch_npu is imported at call time.
"""
from __future__ import annotations

import functools
import importlib

import torch

from ...ops.cpu.mla import check_mla_cache_args
from ...ops.graph import GraphCaptureError
from .attention import reshape_and_cache

_RING_MASK_SIZE = 512    # vllm-ascend v0.11.0 ``ring_mla_mask_size``; the ATB document's mask is [512, 512]


def _torch_npu():
    return importlib.import_module("torch_npu")


def concat_and_cache_mla(kv_c: torch.Tensor, k_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """Write ``kv_c`` ``[T, L]`` and ``k_pe`` ``[T, R]`` to their slots with ``_npu_reshape_and_cache``; skip slots < 0."""
    latent, rope = check_mla_cache_args(kv_c_cache, k_pe_cache)
    if kv_c.dim() != 2 or kv_c.shape[1] != latent or k_pe.shape != (kv_c.shape[0], rope):
        raise ValueError(f"need kv_c [T, {latent}] and k_pe [T, {rope}], got {tuple(kv_c.shape)} and {tuple(k_pe.shape)}")
    reshape_and_cache(kv_c.view(-1, 1, latent), k_pe.view(-1, 1, rope), kv_c_cache, k_pe_cache, slot_mapping)


def mla_decode_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    """Absorbed MLA decode with FIA's MLA form; returns ``[B, nh, L]`` (zeros for requests of length 0)."""
    latent, rope = check_mla_cache_args(kv_c_cache, k_pe_cache)
    batch = seq_lens.shape[0]
    if q_nope.dim() != 3 or q_nope.shape[0] != batch or q_nope.shape[2] != latent or \
            q_pe.shape != (*q_nope.shape[:2], rope) or block_tables.dim() != 2 or block_tables.shape[0] != batch:
        raise ValueError(f"need q_nope [B={batch}, nh, {latent}], q_pe [B, nh, {rope}] and block_tables [B, max_blocks], "
                         f"got {tuple(q_nope.shape)}, {tuple(q_pe.shape)} and {tuple(block_tables.shape)}")
    torch_npu = _torch_npu()
    if torch_npu.npu.is_current_stream_capturing():
        raise GraphCaptureError("mla_decode_attention (npu)", "FIA tiles on the host from actual_seq_lengths_kv, and "
                                "this engine's ACL graph updates only _npu_paged_attention tasks per replay")
    lengths = seq_lens.tolist()
    live = [b for b, n in enumerate(lengths) if n > 0]   # a request of length 0 (padding) is not sent to the op
    out = q_nope.new_zeros(q_nope.shape)
    if not live:
        return out
    rows = torch.tensor(live, device=q_nope.device)
    num_heads, block_size = q_nope.shape[1], kv_c_cache.shape[1]
    k_nope = kv_c_cache.view(-1, 1, block_size, latent)     # (blocknum, KV_N=1, blocksize, D): BNSD's paged layout
    k_pe = k_pe_cache.view(-1, 1, block_size, rope)
    attn_output, _ = torch_npu.npu_fused_infer_attention_score(
        q_nope[rows].view(len(live), num_heads, 1, latent), k_nope, k_nope,
        query_rope=q_pe[rows].view(len(live), num_heads, 1, rope), key_rope=k_pe, num_heads=num_heads,
        num_key_value_heads=1, input_layout="BNSD", atten_mask=None, sparse_mode=0, scale=scale, antiquant_mode=0,
        antiquant_scale=None, block_table=block_tables[rows].to(torch.int32), block_size=block_size,
        actual_seq_lengths=None, actual_seq_lengths_kv=[lengths[b] for b in live])
    out[rows] = attn_output.view(len(live), num_heads, latent)
    return out


def gather_mla_cache(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor, block_tables: torch.Tensor,
                     seq_lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each request's first ``seq_lens[b]`` latents and rotary keys, end to end, with ``npu_paged_cache_load``."""
    latent, rope = check_mla_cache_args(kv_c_cache, k_pe_cache)
    if block_tables.dim() != 2 or seq_lens.dim() != 1 or block_tables.shape[0] != seq_lens.shape[0]:
        raise ValueError(f"need block_tables [B, max_blocks] and seq_lens [B], got {tuple(block_tables.shape)} "
                         f"and {tuple(seq_lens.shape)}")
    lengths = seq_lens.to(torch.int32)
    total = int(lengths.sum())
    kv_c = kv_c_cache.new_empty(total, 1, latent)
    k_pe = k_pe_cache.new_empty(total, 1, rope)
    _torch_npu().atb.npu_paged_cache_load(kv_c_cache, k_pe_cache, block_tables.to(torch.int32), lengths,
                                          seq_starts=torch.zeros_like(lengths), key=kv_c, value=k_pe)
    return kv_c.view(total, latent), k_pe.view(total, rope)


@functools.lru_cache(maxsize=None)
def _prefill_mask(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """vllm-ascend v0.11.0 ``_forward_prefill``'s mask: 512x512, strictly upper triangle ``finfo(float32).min`` for
    float16 and ``1`` for other dtypes, zeros elsewhere, in the query's dtype."""
    value = torch.finfo(torch.float32).min if dtype == torch.float16 else 1
    upper = torch.triu(torch.ones(_RING_MASK_SIZE, _RING_MASK_SIZE, dtype=dtype, device=device), 1)
    return torch.where(upper == 1, value, 0).to(dtype)


def _rows(starts: list[int], ends: list[int], device: torch.device) -> torch.Tensor:
    parts = [torch.arange(a, b, device=device) for a, b in zip(starts, ends)]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long, device=device)


def mla_prefill_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          query_start_loc: torch.Tensor, kv_start_loc: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal attention over contiguous per-request K/V with ``npu_ring_mla`` (the expanded MLA prefill): ``[T, nh, Dv]``.

    The op takes the no-rope and rope parts apart (the document's ``q_nope`` is as wide as ``value``, 128, and
    ``q_rope`` 64); scores only sum over both, so the query and key are split at ``Dv``, which is DeepSeek's split
    (``qk_nope_head_dim == v_head_dim``). A model whose ``Dqk`` is not wider than ``Dv`` (never DeepSeek's, which
    vllm-ascend serves) gets zero columns appended to query and key first: they add nothing to a score. Request
    ``b``'s last ``n`` keys are its queries' own: the first ring attends to them causally; the keys before them
    (the cached context) go to the second ring, unmasked.
    """
    if query.dim() != 3 or key.dim() != 3 or value.dim() != 3 or key.shape[:2] != value.shape[:2] or \
            key.shape[1:] != query.shape[1:]:
        raise ValueError(f"need query [T, nh, Dqk], key [S, nh, Dqk] and value [S, nh, Dv], got "
                         f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}")
    num_heads, head_dim, v_dim = query.shape[1], query.shape[2], value.shape[2]
    if head_dim <= v_dim:   # ring_mla needs a no-rope part as wide as value and a rope part after it
        query, key = (torch.nn.functional.pad(t, (0, v_dim + 1 - head_dim)) for t in (query, key))
        head_dim = v_dim + 1
    q_starts, kv_starts = query_start_loc.tolist(), kv_start_loc.tolist()
    if len(q_starts) != len(kv_starts) or q_starts[0] or kv_starts[0] or q_starts[-1] > query.shape[0] or \
            kv_starts[-1] > key.shape[0]:
        raise ValueError(f"query_start_loc and kv_start_loc must both be [B+1], from 0 to at most {query.shape[0]} and "
                         f"{key.shape[0]}; got {q_starts} and {kv_starts}")
    requests = [(q0, q1, k0, k1) for q0, q1, k0, k1 in zip(q_starts, q_starts[1:], kv_starts, kv_starts[1:])]
    if any(q1 - q0 > k1 - k0 for q0, q1, k0, k1 in requests):
        raise ValueError(f"every request needs at least as many keys as queries (its keys include the queries' own); "
                         f"got query_start_loc {q_starts} and kv_start_loc {kv_starts}")
    live = [r for r in requests if r[1] > r[0]]    # the op takes no request without queries
    result = query.new_zeros(query.shape[0], num_heads, v_dim)
    if not live:
        return result
    device = query.device
    q_rows = _rows([r[0] for r in live], [r[1] for r in live], device)
    new_rows = _rows([r[3] - (r[1] - r[0]) for r in live], [r[3] for r in live], device)
    context_rows = _rows([r[2] for r in live], [r[3] - (r[1] - r[0]) for r in live], device)
    q_lens = torch.tensor([r[1] - r[0] for r in live], dtype=torch.int32)
    context_lens = torch.tensor([r[3] - r[2] - (r[1] - r[0]) for r in live], dtype=torch.int32)
    split = [v_dim, head_dim - v_dim]
    q_nope, q_pe = query[q_rows].split(split, dim=-1)
    out = query.new_empty(q_rows.shape[0], num_heads, v_dim)
    lse = torch.empty(num_heads, q_rows.shape[0], dtype=torch.float32, device=device)
    mask = _prefill_mask(query.dtype, device)
    torch_npu = _torch_npu()
    k_nope, k_pe = key[new_rows].split(split, dim=-1)
    torch_npu.atb.npu_ring_mla(q_nope=q_nope, q_rope=q_pe, k_nope=k_nope, k_rope=k_pe, value=value[new_rows],
                               mask=mask, seqlen=q_lens, head_num=num_heads, kv_head_num=num_heads, pre_out=None,
                               prev_lse=None, qk_scale=scale, kernel_type="kernel_type_high_precision",
                               mask_type="mask_type_triu", input_layout="type_bsnd",
                               calc_type="calc_type_first_ring", output=out, softmax_lse=lse)
    if context_rows.numel():
        k_nope, k_pe = key[context_rows].split(split, dim=-1)
        torch_npu.atb.npu_ring_mla(q_nope=q_nope, q_rope=q_pe, k_nope=k_nope, k_rope=k_pe, value=value[context_rows],
                                   mask=mask, seqlen=torch.stack([q_lens, context_lens]), head_num=num_heads,
                                   kv_head_num=num_heads, pre_out=out, prev_lse=lse, qk_scale=scale,
                                   kernel_type="kernel_type_high_precision", mask_type="no_mask",
                                   input_layout="type_bsnd", calc_type="calc_type_default", output=out,
                                   softmax_lse=lse)
    result[q_rows] = out
    return result
