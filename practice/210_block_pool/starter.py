"""Exercise 210: a block pool with a free queue and reference counts. Keep the names."""
from __future__ import annotations

from collections import deque


class NoFreeBlocksError(RuntimeError):
    """Not enough free blocks for an allocation."""


class BlockPool:
    def __init__(self, num_blocks: int) -> None:
        self.free_queue = deque(range(num_blocks))
        self.counts = [0] * num_blocks

    @property
    def num_free(self) -> int:
        raise NotImplementedError("num_free")

    def ref_count(self, block: int) -> int:
        raise NotImplementedError("ref_count")

    def allocate(self, n: int) -> list[int]:
        # TODO: check n, check there are enough free blocks, pop from the front, set counts to 1
        raise NotImplementedError("allocate")

    def share(self, blocks: list[int]) -> None:
        # TODO: check every id first; a free block leaves the free queue (once); add one per appearance
        raise NotImplementedError("share")

    def free(self, blocks: list[int]) -> None:
        # TODO: validate everything first, then decrement; blocks reaching 0 go to the back of the queue
        raise NotImplementedError("free")
