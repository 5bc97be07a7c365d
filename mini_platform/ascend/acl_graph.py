"""ACL graphs: the Ascend platform's static graph wrapper, with per-replay attention updates.

As vllm-ascend v0.11.0 does in its ``FULL_DECODE_ONLY`` mode (``compilation/acl_graph.py``,
``attention/attention_v1.py``, ``worker/model_runner_v1.py``), the only mode this engine has: one full
decode graph per capture size, attention inside it.

- one ``torch.npu.NPUGraph`` per capture size, captured with ``torch.npu.graph(g, pool=...)`` in the
  platform's global graph pool;
- ATB paged attention computes its tiling on the host from ``context_lens``, so a captured graph would
  keep the lengths of the capture. While capturing, the npu decode kernel (``ascend/ops/attention.py``)
  puts each layer's ``_npu_paged_attention`` in a graph task group, guarded by an ``ExternalEvent`` the
  graph waits on, and saves its arguments in :class:`GraphParams`;
- after launching each replay, :func:`update_attn_params` re-issues every layer's task with the step's
  real lengths (``graph_task_update_begin``/``_end`` on an update stream) and records its event, which
  lets the graph run that layer. Block tables need no update: the task reads them from the persistent
  buffer, which the model runner filled before the replay.

vllm-ascend v0.11.0's model runner calls ``update_attn_params`` only when the step's runtime mode is
``FULL``. Its default is ``PIECEWISE`` (``platform.py`` turns vLLM's ``FULL_AND_PIECEWISE`` into it): there
the graphs are the pieces between attentions and attention runs eagerly, outside any graph, so nothing is
updated. The stream budget (``utils.update_aclgraph_sizes``: ``num_hidden_layers + 1`` pieces per size,
at most 1800 streams) is applied in ``PIECEWISE`` mode only; ``FULL_DECODE_ONLY`` sizes are not pruned by
it, only kept at most ``max_num_seqs`` (``capture_sizes.decode_capture_sizes``), so this module has no
budget (exercise 242 computes it).

The same calls (task groups, ``ExternalEvent``, ``graph_task_update_begin``) are in vllm-ascend at
HEAD 182b75ea (2026-08-22), where the update moved into ``AscendAttentionBackendImpl.update_graph_params``.

torch_npu is imported when first used, so this module imports anywhere.
"""
from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from .platform import NPUPlatform

@dataclass
class GraphParams:
    """Per capture size, one entry per attention layer: its event, task-group handle and call arguments."""
    events: dict[int, list[Any]] = field(default_factory=dict)
    workspaces: dict[int, Any] = field(default_factory=dict)
    handles: dict[int, list[Any]] = field(default_factory=dict)
    attn_params: dict[int, list[tuple]] = field(default_factory=dict)

    def clear(self, size: int) -> None:
        for table in (self.events, self.handles, self.attn_params):
            table[size] = []
        self.workspaces.pop(size, None)


_graph_params: GraphParams | None = None


def get_graph_params() -> GraphParams | None:
    """The graph params of the capture under way (None when no ACL graph is being captured)."""
    return _graph_params


@contextlib.contextmanager
def _capturing_into(params: GraphParams) -> Iterator[None]:
    global _graph_params
    previous, _graph_params = _graph_params, params
    try:
        yield
    finally:
        _graph_params = previous


def _torch_npu() -> Any:
    try:
        return importlib.import_module("torch_npu")
    except ModuleNotFoundError as exc:
        raise RuntimeError("ACL graphs need torch_npu (on a machine without one, run inside "
                           "mini_platform.ascend.emulation.emulated_torch_npu())") from exc


def update_attn_params(update_stream: Any, params: GraphParams, size: int, seq_lens: torch.Tensor) -> None:
    """Re-issue each layer's paged-attention task of graph ``size`` with the step's ``seq_lens`` and release it.

    ``seq_lens`` has one length per row of the graph (the padded step's; any integer dtype, any device): it
    becomes ``context_lens``, int32 on the host. On ``update_stream``, per layer: ``graph_task_update_begin``
    with the layer's handle, ``_npu_paged_attention`` with the captured arguments, the new lengths and the
    size's workspace, ``graph_task_update_end``, then record the layer's event. ValueError, before any task is
    touched, for a size that was never captured or lengths of another shape (exercise 245 stands in for it).
    """
    if size not in params.handles:
        raise ValueError(f"no ACL graph of size {size} was captured (sizes: {sorted(params.handles)})")
    if tuple(seq_lens.shape) != (size,):
        raise ValueError(f"seq_lens must hold one length per row of the graph of size {size}, "
                         f"got shape {tuple(seq_lens.shape)}")
    context_lens = seq_lens.to("cpu", torch.int32)
    torch_npu = _torch_npu()
    npu = torch_npu.npu
    with npu.stream(update_stream):
        for (query, key_cache, value_cache, num_kv_heads, num_heads, scale, block_table, _, out), handle, event in zip(
                params.attn_params[size], params.handles[size], params.events[size]):
            npu.graph_task_update_begin(update_stream, handle)
            torch_npu._npu_paged_attention(query=query, key_cache=key_cache, value_cache=value_cache,
                                           num_kv_heads=num_kv_heads, num_heads=num_heads, scale_value=scale,
                                           block_table=block_table, context_lens=context_lens, out=out,
                                           workspace=params.workspaces.get(size))
            npu.graph_task_update_end(update_stream)
            event.record(update_stream)


class ACLGraphWrapper:
    """Capture ``runnable(size)`` into a ``torch.npu.NPUGraph`` per size; replay it, then update its attention."""

    def __init__(self, runnable: Callable[[int], torch.Tensor], device: str | torch.device) -> None:
        npu = _torch_npu().npu  # on real hardware device is "npu"; under the emulation it is the CPU
        self.runnable = runnable
        self.pool = NPUPlatform.get_global_graph_pool()
        self.update_stream = npu.Stream()
        self.params = GraphParams()
        self.entries: dict[int, tuple[Any, torch.Tensor]] = {}

    def capture(self, size: int) -> None:
        npu = _torch_npu().npu
        self.params.clear(size)
        aclgraph = npu.NPUGraph()
        with _capturing_into(self.params), npu.graph(aclgraph, pool=self.pool):
            output = self.runnable(size)
        self.entries[size] = (aclgraph, output)

    def replay(self, size: int, metadata: Any) -> torch.Tensor:
        """Launch the graph, update its attention tasks with ``metadata.seq_lens``, wait for it to finish."""
        npu = _torch_npu().npu
        aclgraph, output = self.entries[size]
        aclgraph.replay()
        if self.params.handles[size]:  # a piecewise graph holds no attention: nothing to update
            update_attn_params(self.update_stream, self.params, size, metadata.seq_lens)
        npu.current_stream().synchronize()
        return output
