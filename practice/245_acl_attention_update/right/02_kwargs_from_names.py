# Correct: Builds the keyword arguments from a tuple of names, converts the lengths with torch.tensor(tolist()), indexes the three tables by layer number, and records with the current (update) stream.
from __future__ import annotations

import importlib

import torch

NAMES = ("query", "key_cache", "value_cache", "num_kv_heads", "num_heads", "scale_value", "block_table",
         "context_lens", "out")


def update_attn_params(update_stream, params, size, seq_lens):
    if size not in params.handles or size not in params.attn_params:
        raise ValueError(f"unknown graph size {size}")
    if list(seq_lens.shape) != [size]:
        raise ValueError(f"seq_lens shape {tuple(seq_lens.shape)} != ({size},)")
    context_lens = torch.tensor(seq_lens.tolist(), dtype=torch.int32, device="cpu")
    torch_npu = importlib.import_module("torch_npu")
    npu = torch_npu.npu
    with npu.stream(update_stream):
        for layer in range(len(params.handles[size])):
            kwargs = dict(zip(NAMES, params.attn_params[size][layer]))
            kwargs["context_lens"] = context_lens
            npu.graph_task_update_begin(update_stream, params.handles[size][layer])
            torch_npu._npu_paged_attention(**kwargs, workspace=params.workspaces.get(size))
            npu.graph_task_update_end(update_stream)
            params.events[size][layer].record()
