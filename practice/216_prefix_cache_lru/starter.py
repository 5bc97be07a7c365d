"""Exercise 216: a block pool with prefix caching and LRU eviction. Keep the names."""
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
        raise NotImplementedError("num_free")

    def cached_blocks(self) -> dict[str, int]:
        raise NotImplementedError("cached_blocks")

    def allocate(self, token_ids: list[int]) -> list[int]:
        # TODO 1: hits (chain over the full blocks of token_ids[:-1], stop at the first miss)
        # TODO 2: check there are enough blocks (new ones + revived evictable hits) before changing anything
        # TODO 3: take hits, then new blocks (empty queue first, else evict the least recently used)
        # TODO 4: register the prompt's full blocks whose hash is not cached yet
        raise NotImplementedError("allocate")

    def free(self, block_table: list[int]) -> None:
        # TODO: back to front; count 0 -> evictable (cached) or empty (not cached)
        raise NotImplementedError("free")
