# Mistake: cached_blocks() returns the pool's own dict, so a caller that changes it changes the cache.
"""Exercise 216: a block pool with prefix caching and LRU eviction (solution)."""
from __future__ import annotations

import hashlib
from collections import OrderedDict, deque


class NoFreeBlocksError(RuntimeError):
    """Not enough available blocks for an allocation."""


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block chained on the previous block's hash (None for the first block). Given."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()


class PrefixCachePool:
    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.block_size = block_size
        self.counts = [0] * num_blocks
        self.block_hash: list[str | None] = [None] * num_blocks   # cached content of each block, if any
        self.empty = deque(range(num_blocks))                     # count 0, nothing cached
        self.evictable: OrderedDict[int, None] = OrderedDict()    # count 0, cached; first = least recent
        self.cache: dict[str, int] = {}                           # hash -> block id

    @property
    def num_free(self) -> int:
        return len(self.empty) + len(self.evictable)

    def cached_blocks(self) -> dict[str, int]:
        return self.cache

    def _hashes(self, token_ids: list[int]) -> list[str]:
        hashes, parent, bs = [], None, self.block_size
        for start in range(0, len(token_ids) - bs + 1, bs):
            parent = hash_block(parent, token_ids[start:start + bs])
            hashes.append(parent)
        return hashes

    def allocate(self, token_ids: list[int]) -> list[int]:
        hits = []
        for h in self._hashes(token_ids[:-1]):
            if h not in self.cache:
                break
            hits.append(self.cache[h])
        need = -(-len(token_ids) // self.block_size) - len(hits)
        revived = sum(1 for b in hits if self.counts[b] == 0)
        if need + revived > self.num_free:
            raise NoFreeBlocksError(f"need {need} new blocks (+{revived} revived), only {self.num_free} available")
        for b in hits:
            if self.counts[b] == 0:
                del self.evictable[b]
            self.counts[b] += 1
        table = hits + [self._take() for _ in range(need)]
        for i, h in enumerate(self._hashes(token_ids)):
            if h not in self.cache:
                self.cache[h] = table[i]
                self.block_hash[table[i]] = h
        return table

    def _take(self) -> int:
        if self.empty:
            b = self.empty.popleft()
        else:
            b, _ = self.evictable.popitem(last=False)
            del self.cache[self.block_hash[b]]
            self.block_hash[b] = None
        self.counts[b] = 1
        return b

    def free(self, block_table: list[int]) -> None:
        for b in reversed(block_table):
            self.counts[b] -= 1
            if self.counts[b] == 0:
                if self.block_hash[b] is None:
                    self.empty.append(b)
                else:
                    self.evictable[b] = None
