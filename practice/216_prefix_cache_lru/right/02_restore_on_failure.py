# Correct: no up-front count: hits are revived and blocks taken one by one, and when the blocks run out the state is restored from a deep copy taken at the start, then NoFreeBlocksError is raised.
from __future__ import annotations

import copy
import hashlib


class NoFreeBlocksError(RuntimeError):
    """Not enough available blocks for an allocation."""


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block chained on the previous block's hash (None for the first block). Given."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()


class PrefixCachePool:
    """Works on the state directly and restores a deep copy of it when an allocation runs out of blocks."""

    def __init__(self, num_blocks, block_size):
        self.bs = block_size
        self.state = {"refs": [0] * num_blocks, "hash_of": [None] * num_blocks,
                      "empty": list(range(num_blocks)), "lru": [], "cache": {}}

    @property
    def num_free(self):
        return len(self.state["empty"]) + len(self.state["lru"])

    def cached_blocks(self):
        return dict(self.state["cache"])

    def _full_block_hashes(self, tokens):
        hashes, parent = [], None
        for start in range(0, len(tokens) // self.bs * self.bs, self.bs):
            parent = hash_block(parent, tokens[start:start + self.bs])
            hashes.append(parent)
        return hashes

    def _grab(self):
        s = self.state
        if s["empty"]:
            b = s["empty"].pop(0)
        elif s["lru"]:
            b = s["lru"].pop(0)
            del s["cache"][s["hash_of"][b]]
            s["hash_of"][b] = None
        else:
            raise NoFreeBlocksError("out of blocks")
        s["refs"][b] = 1
        return b

    def allocate(self, token_ids):
        saved = copy.deepcopy(self.state)
        s = self.state
        try:
            table = []
            for h in self._full_block_hashes(token_ids[:-1]):
                if h not in s["cache"]:
                    break
                b = s["cache"][h]
                if s["refs"][b] == 0:
                    s["lru"].remove(b)
                s["refs"][b] += 1
                table.append(b)
            while len(table) < -(-len(token_ids) // self.bs):
                table.append(self._grab())
        except NoFreeBlocksError:
            self.state = saved
            raise NoFreeBlocksError(f"prompt of {len(token_ids)} tokens does not fit") from None
        for i, h in enumerate(self._full_block_hashes(token_ids)):
            if h not in s["cache"]:
                s["cache"][h] = table[i]
                s["hash_of"][table[i]] = h
        return table

    def free(self, block_table):
        s = self.state
        for b in reversed(block_table):
            s["refs"][b] -= 1
            if s["refs"][b] == 0:
                (s["lru"] if s["hash_of"][b] is not None else s["empty"]).append(b)
