"""One writer, several readers on this machine: a ring of shared-memory chunks (vLLM's ``MessageQueue``).

vLLM's executor broadcasts each step's inputs to its workers this way (``ShmRingBuffer`` and
``MessageQueue`` in ``vllm/distributed/device_communicators/shm_broadcast.py``, read at commit f0afa0c2)
instead of pickling the same bytes once per worker down a pipe. The layout here follows it: ``chunks``
data chunks of ``chunk_bytes``, and per chunk a metadata line of one *written* flag and one *read* flag
per reader. The writer takes the next chunk once every reader has read it (or it was never written),
writes ``[length][payload]``, clears the read flags and sets *written*; reader ``i`` waits for *written*
on its next chunk, copies the payload out and sets its read flag. A message too big for a chunk is written
as a marker (length -1) and its bytes go down each reader's pipe (vLLM sends those over ZMQ).

vLLM's readers poll without end, which assumes a core per reader. Here a reader polls 50 us, then says it
sleeps (one flag per reader) and blocks on its pipe; the writer sends an empty wake-up message to the
readers that sleep (:func:`broadcast`, :func:`receive`). A store then a fence then a load on both sides
(flag, then "written"; "written", then flag) means at least one side sees the other, so no wake-up is lost.

The queue's name travels in :meth:`MessageQueue.handle`; the writer unlinks it once every reader has
attached (:meth:`MessageQueue.unlink`), so no ``/dev/shm`` entry outlives the processes, however they end.
"""
from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from multiprocessing import shared_memory
from multiprocessing.connection import Connection
from typing import Callable

from .shm_allreduce import LINE, attach_segment, memory_fence, segment_name

OVERFLOW = -1
SPIN_S = 50e-6   # how long a reader polls before it sleeps on its pipe
WAKE_UP = b""    # the message that only wakes a sleeping reader


@dataclass(frozen=True)
class Handle:
    """What a reader needs to attach (picklable)."""
    name: str
    readers: int
    chunk_bytes: int
    chunks: int


class MessageQueue:
    """Create with ``MessageQueue(readers)`` in the writer; ``MessageQueue.attach(handle, i)`` in reader ``i``."""

    def __init__(self, readers: int, chunk_bytes: int = 1 << 20, chunks: int = 4, *,
                 _handle: Handle | None = None, _reader: int | None = None) -> None:
        if readers + 1 > LINE:
            raise ValueError(f"at most {LINE - 1} readers")
        if _handle is None:
            chunk_bytes = -(-chunk_bytes // LINE) * LINE
            _handle = Handle(segment_name("mq"), readers, chunk_bytes, chunks)
            meta = (chunks + 1) * LINE
            shm = shared_memory.SharedMemory(_handle.name, create=True, size=meta + chunks * chunk_bytes)
            shm.buf[:meta] = bytes(meta)
        else:
            shm = attach_segment(_handle.name)
        self._handle, self.reader = _handle, _reader
        self._shm = shm
        meta = (_handle.chunks + 1) * LINE
        self._meta = shm.buf[:meta]       # chunk c: [written, read_0, read_1, ...]; last line: sleeping_i
        self._sleeping = _handle.chunks * LINE
        self._data = shm.buf[meta:]
        self._next = 0                    # the chunk this side writes or reads next
        self._linked = [_reader is None]  # the writer owns the name until unlink()
        self._finalizer = weakref.finalize(self, _release, shm, self._meta, self._data, self._linked)

    @classmethod
    def attach(cls, handle: Handle, reader: int) -> "MessageQueue":
        return cls(handle.readers, _handle=handle, _reader=reader)

    def handle(self) -> Handle:
        return self._handle

    def unlink(self) -> None:
        """Remove the name (the writer, once every reader has attached); the mapping stays."""
        if self._linked[0]:
            self._linked[0] = False
            self._shm.unlink()

    # -- the writer ------------------------------------------------------------------------------------
    def enqueue(self, payload: bytes, timeout_s: float = 60.0) -> bool:
        """Write one message for every reader; False when it is too big for a chunk (a marker was written:
        send the bytes by the other channel). Raises TimeoutError if a reader has not freed the chunk."""
        h, c = self._handle, self._next
        line = c * LINE
        deadline = time.monotonic() + timeout_s
        while self._meta[line] and not all(self._meta[line + 1:line + 1 + h.readers]):
            if time.monotonic() > deadline:
                unread = [i for i in range(h.readers) if not self._meta[line + 1 + i]]
                raise TimeoutError(f"no chunk freed within {timeout_s:g} s: reader(s) {unread} did not read message")
            time.sleep(1e-5)
        memory_fence()
        fits = 8 + len(payload) <= h.chunk_bytes
        start = c * h.chunk_bytes
        self._data[start:start + 8] = (len(payload) if fits else OVERFLOW).to_bytes(8, "little", signed=True)
        if fits:
            self._data[start + 8:start + 8 + len(payload)] = payload
        self._meta[line + 1:line + 1 + h.readers] = bytes(h.readers)
        memory_fence()
        self._meta[line] = 1
        self._next = (c + 1) % h.chunks
        memory_fence()
        return fits

    def sleeping_readers(self) -> list[int]:
        """The readers that sleep on their pipe (ask right after ``enqueue``: they need a wake-up)."""
        return [i for i in range(self._handle.readers) if self._meta[self._sleeping + i]]

    # -- a reader --------------------------------------------------------------------------------------
    def dequeue(self, other: Callable[[float], bool], timeout_s: float | None = None) -> bytes | None:
        """The next message's bytes, or None: read the other channel, because the message overflowed or
        because ``other(seconds)`` (block up to that long: "has the other channel something?") said so.
        Raises TimeoutError past ``timeout_s``."""
        h, c, i = self._handle, self._next, self.reader
        line = c * LINE
        ready = lambda: self._meta[line] and not self._meta[line + 1 + i]  # noqa: E731
        start = time.monotonic()
        while not ready() and time.monotonic() - start < SPIN_S:
            pass
        if not ready():
            self._meta[self._sleeping + i] = 1
            memory_fence()
            try:
                while not ready():
                    left = None if timeout_s is None else timeout_s - (time.monotonic() - start)
                    if left is not None and left <= 0:
                        raise TimeoutError(f"reader {i}: no message within {timeout_s:g} s")
                    if other(1.0 if left is None else min(left, 1.0)):
                        memory_fence()
                        if not ready():
                            return None
            finally:
                self._meta[self._sleeping + i] = 0
        memory_fence()
        start = c * h.chunk_bytes
        n = int.from_bytes(self._data[start:start + 8], "little", signed=True)
        payload = None if n == OVERFLOW else bytes(self._data[start + 8:start + 8 + n])
        memory_fence()
        self._meta[line + 1 + i] = 1
        self._next = (c + 1) % h.chunks
        return payload

    def close(self) -> None:
        self._finalizer()


def broadcast(queue: MessageQueue | None, conns: list[Connection], data: bytes, timeout_s: float = 60.0) -> None:
    """The writer's side: ``data`` to every reader once through ``queue`` (waking the sleepers down their
    pipes ``conns``), or down every pipe when there is no queue or it does not fit a chunk."""
    if queue is not None and queue.enqueue(data, timeout_s):
        for i in queue.sleeping_readers():
            conns[i].send_bytes(WAKE_UP)
        return
    for conn in conns:
        conn.send_bytes(data)


def receive(queue: MessageQueue | None, conn: Connection) -> bytes:
    """A reader's side: the next message from the queue or the pipe (wake-ups skipped). Raises EOFError
    when the writer is gone (its end of the pipe closed)."""
    while True:
        data = None if queue is None else queue.dequeue(conn.poll)
        if data is None:
            data = conn.recv_bytes()
        if data != WAKE_UP:
            return data


def _release(shm: shared_memory.SharedMemory, meta: memoryview, data: memoryview, linked: list[bool]) -> None:
    meta.release()
    data.release()
    try:
        shm.close()
    except BufferError:
        pass
    if linked[0]:
        linked[0] = False
        shm.unlink()
