"""Exercise 245: update the attention tasks of an ACL graph after each replay is launched. Keep the names."""
from __future__ import annotations

import importlib  # noqa: F401  (import torch_npu when called)
from typing import Any

import torch

from mini_platform.ascend.acl_graph import GraphParams


def update_attn_params(update_stream: Any, params: GraphParams, size: int, seq_lens: torch.Tensor) -> None:
    # TODO 1: ValueError, before touching any task, for a size never captured or seq_lens not of shape (size,)
    # TODO 2: context_lens = the lengths as an int32 tensor on the host
    # TODO 3: inside torch_npu.npu.stream(update_stream), for each layer's (arguments, handle, event):
    #         graph_task_update_begin -> _npu_paged_attention(captured arguments, new context_lens,
    #         workspace=params.workspaces.get(size)) -> graph_task_update_end -> event.record
    raise NotImplementedError("update_attn_params")
