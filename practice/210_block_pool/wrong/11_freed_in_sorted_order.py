# Mistake: Appends the blocks that reach 0 to the free queue in id order instead of the order of their last appearance.
"""Exercise 210: a block pool with a free queue and reference counts (solution)."""
from __future__ import annotations

from collections import Counter, deque


class NoFreeBlocksError(RuntimeError):
    """Not enough free blocks for an allocation."""


class BlockPool:
    def __init__(self, num_blocks: int) -> None:
        self.free_queue = deque(range(num_blocks))
        self.counts = [0] * num_blocks

    @property
    def num_free(self) -> int:
        return len(self.free_queue)

    def ref_count(self, block: int) -> int:
        self._check_id(block)
        return self.counts[block]

    def _check_id(self, block: int) -> None:
        if not 0 <= block < len(self.counts):
            raise ValueError(f"block {block} is not in this pool (0..{len(self.counts) - 1})")

    def allocate(self, n: int) -> list[int]:
        if n < 0:
            raise ValueError(f"cannot allocate {n} blocks")
        if n > len(self.free_queue):
            raise NoFreeBlocksError(f"need {n} blocks, only {len(self.free_queue)} free")
        blocks = [self.free_queue.popleft() for _ in range(n)]
        for b in blocks:
            self.counts[b] = 1
        return blocks

    def share(self, blocks: list[int]) -> None:
        for b in blocks:
            self._check_id(b)
        for b in blocks:
            if self.counts[b] == 0:  # a free block whose contents are still wanted: it leaves the queue
                self.free_queue.remove(b)
            self.counts[b] += 1

    def free(self, blocks: list[int]) -> None:
        times = Counter(blocks)
        for b, k in times.items():
            self._check_id(b)
            if k > self.counts[b]:
                raise ValueError(f"block {b} freed {k} times but its count is {self.counts[b]}")
        last = {b: i for i, b in enumerate(blocks)}
        for b, k in times.items():
            self.counts[b] -= k
        self.free_queue.extend(b for b in sorted(last) if self.counts[b] == 0)
