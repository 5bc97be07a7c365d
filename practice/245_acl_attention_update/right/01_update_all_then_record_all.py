# Correct: Updates every layer's task first, then records every event (still update before record), checking the shape before the size.
from __future__ import annotations

import importlib

import torch


def update_attn_params(update_stream, params, size, seq_lens):
    if seq_lens.dim() != 1 or seq_lens.shape[0] != size:
        raise ValueError(f"expected {size} lengths in a 1-D tensor, got shape {list(seq_lens.shape)}")
    if size not in params.events:
        raise ValueError(f"size {size} has no captured ACL graph")
    torch_npu = importlib.import_module("torch_npu")
    lens = seq_lens.detach().cpu().to(torch.int32)
    workspace = params.workspaces.get(size)
    with torch_npu.npu.stream(update_stream):
        for args, handle in zip(params.attn_params[size], params.handles[size]):
            torch_npu.npu.graph_task_update_begin(update_stream, handle)
            torch_npu._npu_paged_attention(
                query=args[0], key_cache=args[1], value_cache=args[2], num_kv_heads=args[3], num_heads=args[4],
                scale_value=args[5], block_table=args[6], context_lens=lens, out=args[8], workspace=workspace)
            torch_npu.npu.graph_task_update_end(update_stream)
        for event in params.events[size]:
            event.record(update_stream)
