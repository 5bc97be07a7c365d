"""Paged KV cache and paged attention on Ascend, through torch_npu as vllm-ascend calls it.

- KV write: ``torch_npu._npu_reshape_and_cache`` (ATB; vllm-ascend v0.7.3 to v0.24).
- Decode: ``torch_npu._npu_paged_attention`` (ATB PagedAttention, no mask; the host needs ``context_lens``
  on the CPU, as vllm-ascend passes ``seq_lens_cpu``). While an ACL graph is captured, each call is a
  graph task group guarded by an ``ExternalEvent``, its arguments saved for the per-replay update
  (see ``mini_platform.ascend.acl_graph``).
- Prefill, prefix hits, chunks and mixed batches: ``torch_npu.npu_fused_infer_attention_score`` in
  TND layout over the block table with ``sparse_mode=3`` (right-down causal) and the 2048x2048
  ``triu(ones, 1)`` int8 mask, the call vllm-ascend's ``attention_v1.py`` makes.

The cache layout is vllm-ascend's: K and V each ``[num_blocks, block_size, num_kv_heads, head_dim]``.
torch_npu is imported at call time, so this module imports anywhere (and runs on CPU tensors under
``mini_platform.ascend.emulation.emulated_torch_npu``).
"""
from __future__ import annotations

import functools
import importlib

import torch

from ...ops.cpu.attention import check_attention_args, check_cache_args
from ..acl_graph import get_graph_params


def _torch_npu():
    return importlib.import_module("torch_npu")


@functools.lru_cache(maxsize=None)
def _causal_mask(device: torch.device) -> torch.Tensor:
    """The optimised mask for ``sparse_mode=3``: 2048x2048 int8, 1 strictly above the diagonal (= masked)."""
    return torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8).to(device)


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                      slot_mapping: torch.Tensor) -> None:
    """Write ``key``/``value`` ``[T, nkv, hd]`` to their slots with ``_npu_reshape_and_cache``; skip slots < 0.

    Eagerly, vllm-ascend never hands padding to the op (it slices to the real tokens first); ATB does not
    document what a negative slot does, so padding rows are dropped here before the call. In a graph
    that filter (a host read) cannot run: vllm-ascend's slice length is then the frozen capture size,
    so the padded slots (-1) reach the op, and so they do here.
    """
    if slot_mapping.shape != key.shape[:1]:
        raise ValueError(f"slot_mapping must be [T={key.shape[0]}], got {tuple(slot_mapping.shape)}")
    slots = slot_mapping.to(torch.int32)
    keep = slots >= 0
    if not _torch_npu().npu.is_current_stream_capturing() and not bool(keep.all()):
        key, value, slots = key[keep], value[keep], slots[keep]
    _torch_npu()._npu_reshape_and_cache(key=key, value=value, key_cache=key_cache, value_cache=value_cache,
                                        slot_indices=slots)


def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """One query per sequence with ATB ``_npu_paged_attention``; returns ``[B, nh, hd]``."""
    if query.dim() != 3 or query.shape[0] != seq_lens.shape[0]:
        raise ValueError(f"decode query must be [B, num_heads, head_dim] with B = len(seq_lens) = {seq_lens.shape[0]}, "
                         f"got {tuple(query.shape)}")
    check_cache_args(key_cache, value_cache, query.shape[1], query.shape[2])
    torch_npu = _torch_npu()
    out = torch.empty_like(query)
    args = dict(query=query, key_cache=key_cache, value_cache=value_cache, num_kv_heads=key_cache.shape[2],
                num_heads=query.shape[1], scale_value=scale, block_table=block_tables.to(torch.int32),
                context_lens=seq_lens.to("cpu", torch.int32), out=out)
    if not torch_npu.npu.is_current_stream_capturing():
        torch_npu._npu_paged_attention(**args)
        return out
    _capture_paged_attention(torch_npu, args)
    return out


def _capture_paged_attention(torch_npu, args: dict) -> None:
    """The decode attention of one layer inside an ACL graph capture (vllm-ascend v0.11.0 ``_forward_decode_only``)."""
    params, npu = get_graph_params(), torch_npu.npu
    if params is None:
        raise RuntimeError("the npu decode kernel is being captured outside ACLGraphWrapper.capture, so its "
                           "attention could never be updated per replay; capture through ACLGraphWrapper")
    size = args["query"].shape[0]
    if size not in params.workspaces:
        params.workspaces[size] = torch_npu._npu_paged_attention_get_workspace(**args)
    stream = npu.current_stream()
    event = npu.ExternalEvent()
    event.wait(stream)   # in the graph: wait until the host has updated this task ...
    event.reset(stream)  # ... and re-arm the event for the next replay
    params.events[size].append(event)
    params.attn_params[size].append(tuple(args[k] for k in (
        "query", "key_cache", "value_cache", "num_kv_heads", "num_heads", "scale_value", "block_table",
        "context_lens", "out")))
    npu.graph_task_group_begin(stream)
    torch_npu._npu_paged_attention(**args, workspace=params.workspaces[size])
    params.handles[size].append(npu.graph_task_group_end(stream))


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, query_start_loc: torch.Tensor, seq_lens: torch.Tensor,
                    scale: float) -> torch.Tensor:
    """Causal attention for a packed mixed batch with FIA (TND, block table, ``sparse_mode=3``).

    Like vllm-ascend (``query=q[:num_actual_tokens]``), only the real tokens go to the op; padding rows
    after ``query_start_loc[-1]`` get zeros.
    """
    check_attention_args(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens)
    num_blocks, block_size, num_kv_heads, _ = key_cache.shape
    q_ends = query_start_loc[1:].tolist()                       # cumulative, as TND wants
    num_actual = q_ends[-1] if q_ends else 0
    out = _torch_npu().npu_fused_infer_attention_score(
        query=query[:num_actual], key=key_cache.view(num_blocks, block_size, -1),
        value=value_cache.view(num_blocks, block_size, -1), atten_mask=_causal_mask(query.device),
        block_table=block_tables.to(torch.int32), input_layout="TND", block_size=block_size,
        actual_seq_lengths=q_ends, actual_seq_lengths_kv=seq_lens.tolist(),  # per request in PA mode
        num_key_value_heads=num_kv_heads, num_heads=query.shape[1], scale=scale, sparse_mode=3)[0]
    if num_actual == query.shape[0]:
        return out
    return torch.cat([out, out.new_zeros(query.shape[0] - num_actual, *query.shape[1:])])
