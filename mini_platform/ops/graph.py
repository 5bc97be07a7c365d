"""The CPU graph: record the aten operations a piece of code issues, then replay them on the same tensors.

It has the semantics of a CUDA graph that matter to an inference engine, so they can be tested on a CPU:

- **capture** runs the code once under a ``TorchDispatchMode`` and records every aten call with the
  tensors it read and wrote (the recorder keeps them alive, like a graph's private memory pool);
- **replay** re-runs the recorded calls on those same tensors, with no Python model code in between:
  new inputs must be copied into the captured input tensors, and results read from the captured outputs;
- **host-side values are frozen at capture**: Python ints, lists and shapes are stored in the record;
- operations that make the host wait for a tensor's value (``.item()``, ``int(t)``, ``bool(t)``,
  ``.tolist()``) or whose output shape depends on tensor values (``nonzero``, boolean-mask indexing,
  ``unique``, ...) raise :class:`GraphCaptureError` naming the operation, as CUDA stream capture
  refuses them (``cudaErrorStreamCaptureUnsupported``);
- **collectives are captured as nodes**: the functional collectives (``torch.ops._c10d_functional``, e.g.
  ``all_reduce_`` and its ``wait_tensor``) are recorded and re-issued at replay, as NCCL calls are in a CUDA
  graph, so every rank must replay the same graphs in the same order. A plain ``torch.distributed`` call
  (a ``c10d`` op) is refused: it hands back a ``Work`` handle that nothing would wait on at replay.

Capture executes the operations (a CUDA capture only enqueues them), so captured code must be safe to
run on the dummy inputs present at capture. Code that must stay opaque to the recorder (an emulated
device kernel, a compiled CPU kernel: ``ops.cpu.compiled.KernelNode``) can add its own node with
:meth:`Graph.add_node` while :func:`untraced` is active.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Protocol

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

# Ops that hand a tensor's value to the host (the host must wait for the device).
HOST_SYNC_OPS = frozenset({"aten.item", "aten._local_scalar_dense", "aten.is_nonzero", "aten.equal", "aten.allclose"})
# Ops whose output shape depends on tensor values.
DATA_DEPENDENT_OPS = frozenset({
    "aten.nonzero", "aten.masked_select", "aten.unique", "aten._unique", "aten._unique2", "aten.unique_dim",
    "aten.unique_consecutive", "aten.bincount", "aten.repeat_interleave.Tensor",
    "aten.repeat_interleave.self_Tensor"})
# The namespace of the collectives a graph can hold (issued, then waited on, as dispatcher ops), and of the
# torch.distributed calls it cannot (their Work handle is waited on outside the dispatcher).
FUNCTIONAL_COLLECTIVES, C10D = "_c10d_functional", "c10d"
# Tensor methods that read values on the host without going through an aten op.
HOST_READ_METHODS = ("tolist", "numpy", "__array__")


class GraphCaptureError(RuntimeError):
    """An operation that cannot be part of a graph ran during capture."""

    def __init__(self, op: str, reason: str) -> None:
        self.op = op
        super().__init__(f"{op} cannot be captured in a graph: {reason}. Keep host reads and data-dependent "
                         f"shapes out of the captured region (or run this step eagerly)")


class Node(Protocol):
    def run(self) -> None: ...


def frozen(value: Any) -> Any:
    """``value`` with its lists, tuples and dicts copied and its tensors kept by reference: what a graph
    records of a call's arguments (host values frozen, device memory shared)."""
    return tree_map(lambda x: x, value)  # tree_map rebuilds every container


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors inside ``value`` (a tensor, or containers of them), in order."""
    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


class AtenNode:
    """One recorded aten call: its arguments (tensors by reference, everything else by value) and outputs."""

    def __init__(self, func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: Any) -> None:
        self.func, self.args, self.kwargs = func, frozen(args), frozen(kwargs)
        self.single = isinstance(out, torch.Tensor)  # most ops: skip flattening at replay
        self.outputs = tensors_in(out)
        storages = {t.untyped_storage().data_ptr() for t in tensors_in((args, kwargs))}
        writes = any(a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments)
        # Outputs in new memory get the replay's result copied in; outputs aliasing an input (views, and the
        # results of in-place ops) already point at the right memory.
        self.copy_back = [i for i, t in enumerate(self.outputs) if t.untyped_storage().data_ptr() not in storages]
        # A pure view does no work at replay; a collective's wait (an output aliasing its input) does.
        self.collective = func.namespace == FUNCTIONAL_COLLECTIVES
        self.needed = writes or bool(self.copy_back) or self.collective
        # Where the op has an ``out=`` form, replay writes straight into the captured output.
        self.out_op = _out_variant(func) if self.single and self.copy_back else None

    def run(self) -> None:
        if self.out_op is not None:
            self.out_op(*self.args, **self.kwargs, out=self.outputs[0])
            return
        out = self.func(*self.args, **self.kwargs)
        if self.collective and self.copy_back:  # a collective into new memory: finish it before copying it out
            out = tree_map(torch.ops._c10d_functional.wait_tensor, out)
        if self.single:
            if self.copy_back:
                self.outputs[0].copy_(out)
            return
        fresh = tensors_in(out)
        for i in self.copy_back:
            self.outputs[i].copy_(fresh[i])

    def __repr__(self) -> str:
        return f"AtenNode({self.func})"


def _out_variant(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """``aten.mul.out`` for ``aten.mul.Tensor`` (``<overload>_out`` or ``out``): the same arguments plus ``out``."""
    packet, name = func.overloadpacket, func._overloadname
    names = [a.name for a in func._schema.arguments]
    for candidate in ("out" if name == "default" else f"{name}_out", "out"):
        op = getattr(packet, candidate, None)
        if op is not None and [a.name for a in op._schema.arguments if not a.is_out] == names \
                and sum(a.is_out for a in op._schema.arguments) == 1:
            return op
    return None


class Graph:
    """A recorded sequence of nodes; :meth:`replay` runs them again in order on the captured tensors."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._recorder: _Recorder | None = None

    def capture_begin(self) -> None:
        if _state.graph is not None:
            raise RuntimeError("another graph is being captured on this thread; captures cannot nest")
        if self.nodes:
            raise RuntimeError("this graph was captured already; create a new one")
        self._recorder = _Recorder(self)
        _state.graph = self
        self._recorder.__enter__()

    def capture_end(self) -> None:
        recorder, self._recorder = self._recorder, None
        _state.graph = None
        if recorder is not None:
            recorder.__exit__(None, None, None)

    def add_node(self, node: Node) -> None:
        self.nodes.append(node)

    def replay(self) -> None:
        if self._recorder is not None:
            raise RuntimeError("replay() during capture; call capture_end() first")
        with torch.inference_mode():
            for node in self.nodes:
                node.run()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} with {len(self.nodes)} nodes>"


class _State(threading.local):
    graph: Graph | None = None
    paused: bool = False


_state = _State()


def current_graph() -> Graph | None:
    """The graph being captured on this thread, or None."""
    return _state.graph


def is_capturing() -> bool:
    """Whether a capture is recording this thread's operations now (False inside :func:`untraced`)."""
    return _state.graph is not None and not _state.paused


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Run the block without recording or checking it (for code that adds its own opaque node)."""
    paused, _state.paused = _state.paused, True
    try:
        yield
    finally:
        _state.paused = paused


@contextlib.contextmanager
def graph(cpu_graph: Graph) -> Iterator[Graph]:
    """``with graph(g): ...`` captures the block into ``g`` (like ``torch.cuda.graph``)."""
    cpu_graph.capture_begin()
    try:
        yield cpu_graph
    finally:
        cpu_graph.capture_end()


def _refusing(name: str, original: Callable) -> Callable:
    def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if is_capturing():
            raise GraphCaptureError(f"Tensor.{name}", "it copies tensor values to the host")
        return original(self, *args, **kwargs)
    return method


class _Recorder(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing is compiled inside a capture; without this, the first capture imports torch._dynamo (~10 s).
        return False

    def __init__(self, graph_: Graph) -> None:
        super().__init__()
        self.graph = graph_
        self._saved: dict[str, Callable] = {}

    def __enter__(self) -> _Recorder:
        for name in HOST_READ_METHODS:
            self._saved[name] = getattr(torch.Tensor, name)
            setattr(torch.Tensor, name, _refusing(name, self._saved[name]))
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            for name, original in self._saved.items():
                setattr(torch.Tensor, name, original)
            self._saved.clear()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = kwargs or {}
        if _state.paused:
            return func(*args, **kwargs)
        _check_capturable(func, args, kwargs)
        out = func(*args, **kwargs)
        node = AtenNode(func, args, kwargs, out)
        if node.needed:
            self.graph.add_node(node)
        return out


def _check_capturable(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> None:
    packet, full = str(func.overloadpacket), str(func)
    if func.namespace == C10D:
        raise GraphCaptureError(full, "a torch.distributed collective returns a Work handle that a replay would "
                                "never wait on; issue it as a functional collective (torch.ops._c10d_functional)")
    if packet in HOST_SYNC_OPS:
        raise GraphCaptureError(full, "it reads a tensor value on the host (a device-to-host sync)")
    if packet in DATA_DEPENDENT_OPS or full in DATA_DEPENDENT_OPS:
        raise GraphCaptureError(full, "its output shape depends on tensor values")
    if packet in ("aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl_"):
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        if any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices):
            raise GraphCaptureError(f"{full} with a boolean mask",
                                    "a mask index has a data-dependent number of elements")
