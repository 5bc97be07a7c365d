# Correct: an OrderedDict as the free queue (popitem(last=False), del for a revived block), counts in a list; free pops and re-appends repeated ids so the last appearance decides the order.
from __future__ import annotations

from collections import Counter, OrderedDict


class NoFreeBlocksError(RuntimeError):
    """Too few free blocks."""


class BlockPool:
    def __init__(self, num_blocks):
        self.n = num_blocks
        self.refs = [0] * num_blocks
        self.queue = OrderedDict((b, None) for b in range(num_blocks))

    @property
    def num_free(self):
        return len(self.queue)

    def ref_count(self, block):
        if block < 0 or block >= self.n:
            raise ValueError(f"block id {block} out of range [0, {self.n})")
        return self.refs[block]

    def allocate(self, n):
        if n < 0:
            raise ValueError(f"allocate({n}): negative count")
        if n > self.num_free:
            raise NoFreeBlocksError(f"allocate({n}) with {self.num_free} free blocks")
        out = []
        while len(out) < n:
            block, _ = self.queue.popitem(last=False)
            self.refs[block] = 1
            out.append(block)
        return out

    def share(self, blocks):
        for b in blocks:
            self.ref_count(b)                      # raises for a bad id before anything changes
        for b in blocks:
            if b in self.queue:
                del self.queue[b]
            self.refs[b] += 1

    def free(self, blocks):
        need = Counter(blocks)
        for b in need:
            if self.ref_count(b) < need[b]:
                raise ValueError(f"free: block {b} held {self.refs[b]} time(s), released {need[b]}")
        released = OrderedDict()
        for b in blocks:
            self.refs[b] -= 1
            released.pop(b, None)
            released[b] = None
        for b in released:
            if self.refs[b] == 0:
                self.queue[b] = None
