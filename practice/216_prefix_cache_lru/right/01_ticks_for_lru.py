# Correct: dicts of counts and contents, a plain list as the empty queue and an LRU kept as release ticks (evicts the block with the smallest tick); the availability check subtracts the revived hits from num_free.
from __future__ import annotations

import hashlib


class NoFreeBlocksError(RuntimeError):
    """Not enough available blocks for an allocation."""


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block chained on the previous block's hash (None for the first block). Given."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()


class PrefixCachePool:
    """Each block: a count, a hash (or None) and the tick at which it last became evictable."""

    def __init__(self, num_blocks, block_size):
        self.size = block_size
        self.count = {b: 0 for b in range(num_blocks)}
        self.content = {}             # block -> hash it holds
        self.table = {}               # hash -> block
        self.empty = list(range(num_blocks))
        self.released_at = {}         # evictable block -> tick; smallest tick = least recently used
        self.tick = 0

    @property
    def num_free(self):
        return len(self.empty) + len(self.released_at)

    def cached_blocks(self):
        return self.table.copy()

    def _chain(self, tokens):
        out, h = [], None
        for k in range(len(tokens) // self.size):
            h = hash_block(h, tokens[k * self.size:(k + 1) * self.size])
            out.append(h)
        return out

    def allocate(self, token_ids):
        hits = []
        for h in self._chain(token_ids[:-1]):
            block = self.table.get(h)
            if block is None:
                break
            hits.append(block)
        total = (len(token_ids) + self.size - 1) // self.size
        fresh = total - len(hits)
        available = self.num_free - sum(1 for b in hits if b in self.released_at)
        if fresh > available:
            raise NoFreeBlocksError(f"prompt needs {fresh} new blocks, {available} left")
        for b in hits:
            self.released_at.pop(b, None)
            self.count[b] += 1
        new = []
        for _ in range(fresh):
            if self.empty:
                b = self.empty.pop(0)
            else:
                b = min(self.released_at, key=self.released_at.get)
                del self.released_at[b]
                del self.table[self.content.pop(b)]
            self.count[b] = 1
            new.append(b)
        blocks = hits + new
        for i, h in enumerate(self._chain(token_ids)):
            if h not in self.table:
                self.table[h] = blocks[i]
                self.content[blocks[i]] = h
        return blocks

    def free(self, block_table):
        for b in block_table[::-1]:
            self.count[b] -= 1
            if self.count[b]:
                continue
            if b in self.content:
                self.tick += 1
                self.released_at[b] = self.tick
            else:
                self.empty.append(b)
