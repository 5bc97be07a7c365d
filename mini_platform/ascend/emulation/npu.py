"""Emulated ``torch.npu`` graph API: ``NPUGraph``, ``graph``, graph task groups and updates, ``ExternalEvent``.

Names and signatures (parameter names included) as in the torch-npu 2.13.0 wheel's ``torch_npu/npu/graphs.py``,
``streams.py`` and ``utils.py`` (tests/test_torch_npu_wheel.py compares them), and as
vllm-ascend v0.11.0 calls them (``compilation/acl_graph.py``, ``attention/attention_v1.py``):
``NPUGraph().replay()``, ``with torch.npu.graph(g, pool=...)``, ``graph_pool_handle()``,
``is_current_stream_capturing()``, ``graph_task_group_begin(stream)`` / ``handle = graph_task_group_end(stream)``,
``graph_task_update_begin(stream, handle)`` / ``graph_task_update_end(stream)``,
``ExternalEvent().wait/reset/record(stream)``.

The graph is the CPU graph of :mod:`mini_platform.ops.graph`, so capture records every aten call; each
emulated torch_npu op (a device kernel) is recorded as one opaque *task* with its tensors by reference
and its host-side inputs frozen: the ATB kernels compute their tiling on the host from, e.g.,
``context_lens``, so a replay reuses the lengths seen at capture unless the task is updated.

What the emulation models, one thread and no real queues (a stream is a handle; ``stream(s)`` makes it current):

- ``replay()`` launches the graph on the current stream: it runs until a captured ``ExternalEvent.wait`` whose
  event is not recorded yet, and the rest runs when the host records that event (after updating the task it
  guards);
- a task update re-issues the kernel call between ``graph_task_update_begin``/``_end``: the call is not
  run, it replaces the task group's work, host inputs frozen anew;
- ``synchronize()`` raises if a replay still waits on an event nobody recorded (on the device it would
  never finish).

What would hang or go wrong on the device raises at once (RuntimeError): a kernel issued while a task update is
open on another stream than the current one (it is not part of the update); an event recorded on a stream whose
task update is still open (the record would be part of the update, never run); an event recorded on the stream
that launched the replay waiting for it (the record queues behind that replay, which waits forever).

Emulation note: verified against an emulation of torch_npu semantics; not run on Ascend hardware here.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import types
from typing import Any, Callable, Iterator

import torch

from ...ops.graph import Graph, current_graph, frozen, is_capturing, tensors_in, untraced

# Tensor inputs the host reads when it launches the kernel (its tiling); frozen at capture or update.
HOST_TENSOR_INPUTS = {"_npu_paged_attention": ("context_lens",)}


class Stream:
    """A stream handle; work here runs in program order, so it carries no queue of its own."""

    def synchronize(self) -> None:
        synchronize()


_default_stream = Stream()
_current_stream = _default_stream
_blocked: dict[NPUGraph, int] = {}       # replays waiting on an event -> index of the waiting node
_launched_on: dict[NPUGraph, Stream] = {}  # the stream each waiting replay was launched on
_update: list | None = None              # tasks issued between graph_task_update_begin and _end
_update_handle: TaskGroup | None = None
_update_stream: Stream | None = None


def current_stream(device: Any = None) -> Stream:
    return _current_stream


@contextlib.contextmanager
def stream(stream: Stream | None) -> Iterator[None]:
    global _current_stream
    previous = _current_stream
    if stream is not None:
        _current_stream = stream
    try:
        yield
    finally:
        _current_stream = previous


def synchronize(device: Any = None) -> None:
    if _blocked:
        raise RuntimeError(f"{len(_blocked)} graph replay(s) still wait on an ExternalEvent that was never recorded; "
                           "on the device they would never finish. Record the event after updating the task it guards")


def is_current_stream_capturing() -> bool:
    return is_capturing()


def graph_pool_handle() -> object:
    return object()


class _Task:
    """One emulated kernel call: tensors by reference, host-side inputs frozen."""

    def __init__(self, name: str, fn: Callable, args: tuple, kwargs: dict, run_now: bool) -> None:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        host = HOST_TENSOR_INPUTS.get(name, ())
        self.name, self.fn = name, fn
        self.result: Any = None
        with untraced():  # the freezing copies and the kernel's own work are not graph nodes
            bound.arguments.update({k: (v.clone() if k in host else v) if isinstance(v, torch.Tensor) else frozen(v)
                                    for k, v in bound.arguments.items()})
            self.args, self.kwargs = bound.args, bound.kwargs
            if run_now:
                self.result = fn(*self.args, **self.kwargs)
        self.outputs = tensors_in(self.result)

    def run(self) -> None:
        for mine, new in zip(self.outputs, tensors_in(self.fn(*self.args, **self.kwargs))):
            mine.copy_(new)

    def __repr__(self) -> str:
        return f"_Task({self.name})"


def device_kernel(name: str, fn: Callable) -> Callable:
    """``fn`` as a device kernel: recorded as one task while capturing, redirected while updating a task."""
    @functools.wraps(fn)
    def launch(*args: Any, **kwargs: Any) -> Any:
        if _update is not None:
            if _current_stream is not _update_stream:
                raise RuntimeError(f"{name} was issued on another stream than the open task update's: it is not "
                                   "part of the update (on the device it would queue behind the waiting graph). "
                                   "Issue it inside torch_npu.npu.stream(update_stream)")
            _update.append(_Task(name, fn, args, kwargs, run_now=False))
            return None
        if not is_capturing():
            return fn(*args, **kwargs)
        task = _Task(name, fn, args, kwargs, run_now=True)
        current_graph().add_node(task)
        return task.result
    return launch


class TaskGroup:
    """The nodes captured between ``graph_task_group_begin`` and ``_end``; its handle for updates."""

    def __init__(self, nodes: list) -> None:
        self.nodes = nodes

    def run(self) -> None:
        for node in self.nodes:
            node.run()


_group_starts: list[int] = []


def graph_task_group_begin(stream: Stream) -> None:
    if not is_capturing():
        raise RuntimeError("graph_task_group_begin outside graph capture")
    _group_starts.append(len(current_graph().nodes))


def graph_task_group_end(stream: Stream) -> TaskGroup:
    if not _group_starts or not is_capturing():
        raise RuntimeError("graph_task_group_end without graph_task_group_begin during capture")
    nodes = current_graph().nodes
    start = _group_starts.pop()
    group = TaskGroup(nodes[start:])
    nodes[start:] = [group]
    return group


def graph_task_update_begin(stream: Stream, handle: TaskGroup) -> None:
    global _update, _update_handle, _update_stream
    if _update is not None:
        raise RuntimeError("graph_task_update_begin while another task update is open")
    if not isinstance(handle, TaskGroup):
        raise TypeError(f"handle must come from graph_task_group_end, got {type(handle).__name__}")
    _update, _update_handle, _update_stream = [], handle, stream


def graph_task_update_end(stream: Stream) -> None:
    global _update, _update_handle, _update_stream
    if _update is None:
        raise RuntimeError("graph_task_update_end without graph_task_update_begin")
    if stream is not _update_stream:
        raise RuntimeError("graph_task_update_end on another stream than its graph_task_update_begin")
    if not _update:
        raise RuntimeError("graph_task_update_end: no kernel was issued since graph_task_update_begin")
    old_tasks = [node for node in _update_handle.nodes if isinstance(node, _Task)]
    for old, new in zip(old_tasks, _update):  # a re-issued kernel writes where the captured one wrote
        new.outputs = old.outputs
    _update_handle.nodes, _update, _update_handle, _update_stream = _update, None, None, None


class ExternalEvent:
    """An event the host records: captured ``wait``/``reset`` become graph nodes; ``record`` releases a replay."""

    def __init__(self) -> None:
        self.recorded = False

    def wait(self, stream: Stream | None = None) -> None:
        if is_capturing():
            current_graph().add_node(_EventWait(self))
        elif not self.recorded:
            raise RuntimeError("ExternalEvent.wait outside a graph on an event never recorded: this would hang")

    def reset(self, stream: Stream | None = None) -> None:
        if is_capturing():
            current_graph().add_node(_EventReset(self))
        else:
            self.recorded = False

    def record(self, stream: Stream | None = None) -> None:
        stream = _current_stream if stream is None else stream
        if _update is not None and stream is _update_stream:
            raise RuntimeError("ExternalEvent.record inside graph_task_update_begin/_end: the record would become "
                               "part of the task update and never run. Call graph_task_update_end first")
        waiting = [(g, index) for g, index in _blocked.items() if g.nodes[index].event is self]
        if any(_launched_on[g] is stream for g, _ in waiting):
            raise RuntimeError("ExternalEvent recorded on the stream that launched the graph waiting for it: the "
                               "record queues behind that graph, which waits forever. Record it on the update stream")
        self.recorded = True
        for g, index in waiting:
            g._run_from(index)


class _EventWait:
    def __init__(self, event: ExternalEvent) -> None:
        self.event = event

    def run(self) -> None:
        pass


class _EventReset:
    def __init__(self, event: ExternalEvent) -> None:
        self.event = event

    def run(self) -> None:
        self.event.recorded = False


class NPUGraph(Graph):
    """``torch.npu.NPUGraph``: capture through :func:`graph`; ``replay()`` launches the recorded work."""

    def capture_begin(self, pool: Any = None, capture_error_mode: str = "global") -> None:
        super().capture_begin()

    def replay(self) -> None:
        if self in _blocked:
            raise RuntimeError("NPUGraph replayed while its previous replay still waits on an ExternalEvent")
        _launched_on[self] = _current_stream
        self._run_from(0)

    def _run_from(self, index: int) -> None:
        _blocked.pop(self, None)
        with torch.inference_mode():
            for i in range(index, len(self.nodes)):
                node = self.nodes[i]
                if isinstance(node, _EventWait) and not node.event.recorded:
                    _blocked[self] = i
                    return
                node.run()
        _launched_on.pop(self, None)


class graph:  # noqa: N801  (torch_npu's name)
    """``with torch.npu.graph(npu_graph, pool=None, stream=None):`` captures the block into ``npu_graph``."""

    def __init__(self, npu_graph: NPUGraph, pool: Any = None, stream: Stream | None = None,
                 auto_dispatch_capture: bool = False, capture_error_mode: str = "global") -> None:
        self.npu_graph, self.pool = npu_graph, pool

    def __enter__(self) -> None:
        self.npu_graph.capture_begin(self.pool)

    def __exit__(self, *exc: Any) -> None:
        self.npu_graph.capture_end()


def reset_process_state() -> None:
    """A fresh process: no replay waiting, no task update or group open."""
    global _update, _update_handle, _update_stream, _current_stream
    _blocked.clear()
    _launched_on.clear()
    _group_starts.clear()
    _update = _update_handle = _update_stream = None
    _current_stream = _default_stream


# The chip the emulation reports: 250, in the range vllm-ascend v0.11.0 reads as A3 (``vllm_ascend/utils.py``
# ``init_ascend_soc_version``: 220-225 = A2, 250-255 = A3). Set it (e.g. to 220) to emulate an A2 chip.
EMULATED_SOC_VERSION = 250


def get_soc_version() -> int:
    """``torch_npu.npu.get_soc_version()`` (``torch_npu/npu/_backends.py``): the chip's SoC version number."""
    return EMULATED_SOC_VERSION


def build_npu_module() -> types.ModuleType:
    """The emulated ``torch.npu`` / ``torch_npu.npu`` namespace."""
    module = types.ModuleType("torch_npu.npu", "Emulated torch.npu graph and stream API (CPU emulation).")
    for name in ("Stream", "current_stream", "stream", "synchronize", "is_current_stream_capturing",
                 "graph_pool_handle", "graph_task_group_begin", "graph_task_group_end", "graph_task_update_begin",
                 "graph_task_update_end", "ExternalEvent", "NPUGraph", "graph", "get_soc_version"):
        setattr(module, name, globals()[name])
    return module
