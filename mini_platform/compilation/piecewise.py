"""Piecewise graphs: the model compiled with ``torch.compile`` and a custom backend, split at attention, each
piece captured per size with the platform's graph wrapper (vLLM's ``VllmBackend`` in ``vllm/compilation/backends.py``
and ``PiecewiseBackend`` / ``CUDAGraphWrapper`` in ``cuda_piecewise_backend.py`` / ``cuda_graph.py``; read at commit
009eec3b).

- :class:`PiecewiseModel` compiles ``model(input_ids, positions, OpaqueAttention())`` with ``fullgraph=True``: every
  kernel of the ``ops`` interface is bound before tracing (``ops.use_resolved_kernels``, the way vLLM's ``CustomOp``
  picks its ``forward_*`` when a layer is built), so TorchDynamo traces plain torch and the per-call lookups
  (a thread's backend stack, the environment, ``sys.modules``) never reach it. The token dimension is marked
  dynamic, so one trace serves every size (a size-1 step is traced once more: Dynamo specialises sizes 0 and 1).
- :class:`PiecewiseBackend` gets the FX graph, splits it (``split.split_graph``) and puts a :class:`PiecewiseGraph`
  in place of each piece. Attention sub-graphs stay as they are: one custom-op call each, run eagerly.
- A :class:`PiecewiseGraph` runs its piece eagerly unless the forward context's runtime mode is ``PIECEWISE``; then
  it replays its graph of the context's ``num_tokens``, or captures it on the first such call, which must come in
  the model runner's capture phase at start-up (an empty step padded to each size; ``ForwardContext.capturing``):
  a capture later is refused, as vLLM refuses one outside its capture window (``validate_cudagraph_capturing_enabled``,
  which vllm-ascend v0.11.0's ``ACLGraphWrapper`` calls before capturing). Its inputs must be the tensors it was
  captured with (persistent buffers, earlier pieces' outputs): RuntimeError otherwise.
"""
from __future__ import annotations

import types
from typing import Any, Callable

import torch
from torch import fx

from .. import ops
from ..ops.graph import GraphCaptureError
from .attention_op import OpaqueAttention
from .config import SPLITTING_OPS
from .forward_context import ForwardContext, get_forward_context, set_forward_context
from .split import SplitItem, split_graph


class PiecewiseGraph:
    """One piece of the split model, with its graphs: one per size, captured by ``wrapper_cls``."""

    def __init__(self, item: SplitItem, wrapper_cls: type, device: torch.device) -> None:
        self.name, self.module = item.name, item.module
        self.wrapper = wrapper_cls(self._run_capture, device)
        self.input_addresses: dict[int, list[int]] = {}   # size -> data_ptr of each tensor input at capture
        self.num_replays = 0
        self._capture_args: tuple = ()

    def _run_capture(self, size: int) -> Any:
        return self.module(*self._capture_args)

    def __call__(self, *args: Any) -> Any:
        context = get_forward_context()
        if context.runtime_mode != "PIECEWISE":
            return self.module(*args)
        size = context.num_tokens
        addresses = [a.data_ptr() for a in args if isinstance(a, torch.Tensor)]
        if size not in self.input_addresses:
            if not context.capturing:   # vLLM's validate_cudagraph_capturing_enabled, before any capture
                raise RuntimeError(
                    f"{self.name}: no graph of size {size} was captured at start-up, and a graph is captured only "
                    "then: here it would also run the piece twice (a CPU graph executes while it captures, then "
                    "replays). A piece meets a new size mid-run when TorchDynamo traced the model again (a guard "
                    "failed: torch._logging.set_logs(recompiles=True) says which) or a step was dispatched to a size "
                    "that was not captured")
            self._capture_args = args
            try:
                self.wrapper.capture(size)
            finally:
                self._capture_args = ()
            self.input_addresses[size] = addresses
        elif addresses != self.input_addresses[size]:
            raise RuntimeError(f"{self.name}: the inputs of the graph of size {size} are not the tensors it was "
                               "captured with; a piece must read persistent buffers and earlier pieces' outputs")
        else:
            self.num_replays += 1
        return self.wrapper.replay(size, None)


class PiecewiseBackend:
    """The ``torch.compile`` backend: split the traced graph at ``splitting_ops``, wrap each piece."""

    def __init__(self, wrapper_cls: type, device: torch.device, splitting_ops: tuple[str, ...] = SPLITTING_OPS) -> None:
        self.wrapper_cls, self.device, self.splitting_ops = wrapper_cls, device, splitting_ops
        self.graph_modules: list[fx.GraphModule] = []   # what Dynamo traced (one per trace)
        self.splits: list[list[SplitItem]] = []
        self.pieces: list[PiecewiseGraph] = []

    def __call__(self, gm: fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        split_gm, items = split_graph(gm, self.splitting_ops)
        for item in items:
            if not item.is_splitting_op:
                piece = PiecewiseGraph(item, self.wrapper_cls, self.device)
                split_gm.__dict__[item.name] = piece   # shadows the submodule: the split module now calls the piece
                self.pieces.append(piece)
        self.graph_modules.append(gm)
        self.splits.append(items)
        return split_gm


class PiecewiseModel:
    """``model`` compiled for piecewise graphs: call it inside :meth:`run` with the step's forward context."""

    def __init__(self, model: torch.nn.Module, wrapper_cls: type, device: torch.device, backend: str | None) -> None:
        self.model = model
        self.kernels = ops.resolve_kernels(backend)   # the same table every call: Dynamo guards on it
        self.backend = PiecewiseBackend(wrapper_cls, torch.device(device))
        self.attention = OpaqueAttention()
        # TorchDynamo keeps its traces per code object: this model's forward gets a code object of its own, so
        # another engine's traces (other weights, another layer count) are never checked against this one's calls.
        forward = types.FunctionType(PiecewiseModel._forward.__code__.replace(), globals(), "_forward")
        self._compiled = torch.compile(types.MethodType(forward, self), backend=self.backend, fullgraph=True)

    def _forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids, positions, self.attention)

    def run(self, input_ids: torch.Tensor, positions: torch.Tensor, context: ForwardContext) -> torch.Tensor:
        """The hidden states of ``context.num_tokens`` rows; pieces replay when ``context.runtime_mode`` is
        ``PIECEWISE`` (captured at the first such call of a size)."""
        if input_ids.shape[0] > 1:
            torch._dynamo.mark_dynamic(input_ids, 0)
            torch._dynamo.mark_dynamic(positions, 0)
        with ops.use_resolved_kernels(self.kernels), set_forward_context(context):
            try:
                return self._compiled(input_ids, positions)
            except torch._dynamo.exc.TorchDynamoException as exc:  # not traceable in one graph (fullgraph=True)
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise GraphCaptureError("torch.compile", f"TorchDynamo cannot trace the model in one graph "
                                        f"({type(exc).__name__}: {reason})") from exc

    @property
    def num_pieces(self) -> int:
        """Pieces (captured sub-graphs) per split: ``L + 1`` for ``L`` attention layers."""
        return sum(not item.is_splitting_op for item in self.backend.splits[0]) if self.backend.splits else 0
