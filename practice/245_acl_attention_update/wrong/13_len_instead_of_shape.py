# Mistake: Checks len(seq_lens) == size instead of the shape, so a (size, 1) tensor of lengths is accepted.
from __future__ import annotations

import importlib
from typing import Any

import torch

from mini_platform.ascend.acl_graph import GraphParams


def update_attn_params(update_stream: Any, params: GraphParams, size: int, seq_lens: torch.Tensor) -> None:
    if size not in params.handles:
        raise ValueError(f"no ACL graph of size {size} was captured")
    if len(seq_lens) != size:
        raise ValueError(f"seq_lens must have shape ({size},), got {tuple(seq_lens.shape)}")
    context_lens = seq_lens.to(device="cpu", dtype=torch.int32)
    torch_npu = importlib.import_module("torch_npu")
    npu = torch_npu.npu
    with npu.stream(update_stream):
        for args, handle, event in zip(params.attn_params[size], params.handles[size], params.events[size]):
            query, key_cache, value_cache, num_kv_heads, num_heads, scale, block_table, _, out = args
            npu.graph_task_update_begin(update_stream, handle)
            torch_npu._npu_paged_attention(query=query, key_cache=key_cache, value_cache=value_cache,
                                           num_kv_heads=num_kv_heads, num_heads=num_heads, scale_value=scale,
                                           block_table=block_table, context_lens=context_lens, out=out,
                                           workspace=params.workspaces.get(size))
            npu.graph_task_update_end(update_stream)
            event.record(update_stream)
