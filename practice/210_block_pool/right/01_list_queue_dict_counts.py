# Correct: a plain list as the free queue (pop(0), list.remove) and a dict of counts; free works out the order by walking blocks backwards with a seen set, validating on a copy of the counts first.
from __future__ import annotations


class NoFreeBlocksError(RuntimeError):
    pass


class BlockPool:
    def __init__(self, num_blocks):
        self._queue = list(range(num_blocks))
        self._count = {b: 0 for b in range(num_blocks)}

    @property
    def num_free(self):
        return len(self._queue)

    def _valid(self, block):
        if block not in self._count:
            raise ValueError(f"no block with id {block}")

    def ref_count(self, block):
        self._valid(block)
        return self._count[block]

    def allocate(self, n):
        if n < 0:
            raise ValueError("n must be >= 0")
        if len(self._queue) < n:
            raise NoFreeBlocksError(f"{len(self._queue)} free, {n} wanted")
        taken = []
        for _ in range(n):
            block = self._queue.pop(0)
            self._count[block] = 1
            taken.append(block)
        return taken

    def share(self, blocks):
        if any(b not in self._count for b in blocks):
            bad = [b for b in blocks if b not in self._count]
            raise ValueError(f"unknown block ids {bad}")
        for b in blocks:
            if b in self._queue and self._count[b] == 0:
                self._queue.remove(b)
            self._count[b] += 1

    def free(self, blocks):
        after = dict(self._count)
        for b in blocks:
            self._valid(b)
            if after[b] == 0:
                raise ValueError(f"block {b} is freed more often than it is held")
            after[b] -= 1
        order, seen = [], set()
        for b in reversed(blocks):
            if b not in seen:
                seen.add(b)
                order.append(b)
        order.reverse()
        self._count = after
        self._queue.extend(b for b in order if after[b] == 0)
