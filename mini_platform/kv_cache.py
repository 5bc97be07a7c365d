"""Paged KV-cache bookkeeping: which block of the cache holds which token of which request.

The KV cache tensors (per layer, K and V each ``[num_blocks, block_size, num_kv_heads, head_dim]``,
see :func:`mini_platform.model.paged_attention.allocate_kv_caches`) are cut into fixed-size blocks.
This module owns the block pool and never touches the tensors:

- a **block table** per request lists its blocks in token order, so token ``i`` lives in
  ``table[i // block_size]`` at offset ``i % block_size``; its **slot** is ``block * block_size + offset``;
- **reference counts** let several requests share one block (a common prompt prefix);
- **prefix caching**: a full block is named by a hash chained over everything before it
  (``hash(parent_hash, block_token_ids)``), so equal hashes mean equal prefixes and a later request
  can adopt the cached blocks instead of recomputing them;
- blocks nobody references go back to the pool. Blocks holding cached content wait in an LRU list
  and are **evicted only when no empty block is left**, least recently used first.

Allocation that cannot be satisfied returns ``False`` and changes nothing: the scheduler decides
what to do (wait, or preempt a request). Pure Python, no torch.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Sequence


def hash_block(parent_hash: str | None, token_ids: Sequence[int]) -> str:
    """Hash of one full block, chained on the hash of the block before it (None for the first block)."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class Block:
    block_id: int
    ref_count: int = 0
    block_hash: str | None = None  # set once the block is full and registered in the prefix cache


class KVCacheManager:
    """A pool of ``num_blocks`` blocks of ``block_size`` tokens, shared by all requests."""

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks} and {block_size}")
        self.num_blocks, self.block_size = num_blocks, block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.empty: deque[int] = deque(range(num_blocks))      # ref 0, no cached content
        self.evictable: OrderedDict[int, None] = OrderedDict()  # ref 0, cached content; first = least recent
        self.cached: dict[str, int] = {}                        # block hash -> block id
        self.block_tables: dict[str, list[int]] = {}
        self.block_hashes: dict[str, list[str]] = {}            # hash chain of each request's full blocks

    # -- queries ------------------------------------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        """Blocks an allocation may take: empty ones plus cached ones nobody references."""
        return len(self.empty) + len(self.evictable)

    def blocks_needed(self, num_tokens: int) -> int:
        return cdiv(num_tokens, self.block_size)

    def lookup_prefix(self, token_ids: Sequence[int]) -> list[int]:
        """Blocks holding the longest cached prefix of ``token_ids``, in order. Changes nothing.

        At least one token is always left to compute (its logits give the next token), so a prompt
        that is entirely cached still recomputes its last block.
        """
        if not self.enable_prefix_caching:
            return []
        hit, parent = [], None
        for i in range((len(token_ids) - 1) // self.block_size):
            parent = hash_block(parent, token_ids[i * self.block_size:(i + 1) * self.block_size])
            block_id = self.cached.get(parent)
            if block_id is None:
                break
            hit.append(block_id)
        return hit

    def slot_mapping(self, request_id: str, start: int, end: int) -> list[int]:
        """Cache slots (``block * block_size + offset``) of the request's tokens ``start..end-1``."""
        table, bs = self.block_tables[request_id], self.block_size
        return [table[i // bs] * bs + i % bs for i in range(start, end)]

    # -- changes ------------------------------------------------------------------------------------
    def allocate(self, request_id: str, num_tokens: int, prefix_blocks: Sequence[int] = ()) -> bool:
        """Grow the request's block table to hold ``num_tokens`` tokens.

        ``prefix_blocks`` (from :meth:`lookup_prefix`) are adopted, shared, when the request has no
        blocks yet. Returns False and changes nothing when the pool cannot supply the blocks.
        """
        table = self.block_tables.get(request_id)
        adopt = list(prefix_blocks) if table is None else []
        have = (len(table) if table else 0) + len(adopt)
        need = max(self.blocks_needed(num_tokens) - have, 0)
        # An adopted block that nobody references sits in `evictable`: taking it uses up a free block.
        revived = sum(1 for b in adopt if self.blocks[b].ref_count == 0)
        if need + revived > self.num_free_blocks:
            return False
        if table is None:
            table = self.block_tables[request_id] = []
            self.block_hashes[request_id] = []
        for b in adopt:
            block = self.blocks[b]
            if block.ref_count == 0:
                del self.evictable[b]
            block.ref_count += 1
            table.append(b)
            self.block_hashes[request_id].append(block.block_hash)
        table.extend(self._take_free_block() for _ in range(need))
        return True

    def cache_full_blocks(self, request_id: str, token_ids: Sequence[int], num_computed_tokens: int) -> None:
        """Register the request's blocks that became full (their K/V written) in the prefix cache."""
        if not self.enable_prefix_caching:
            return
        table, hashes, bs = self.block_tables[request_id], self.block_hashes[request_id], self.block_size
        for i in range(len(hashes), num_computed_tokens // bs):
            h = hash_block(hashes[-1] if hashes else None, token_ids[i * bs:(i + 1) * bs])
            hashes.append(h)
            block = self.blocks[table[i]]
            # Two requests that computed the same block in one step: the first copy stays the cached one.
            if h not in self.cached:
                block.block_hash = h
                self.cached[h] = block.block_id

    def free(self, request_id: str) -> None:
        """Drop the request's references. Its last blocks are freed first, so they are evicted first
        (a prompt's head is the part other requests are most likely to share)."""
        for b in reversed(self.block_tables.pop(request_id, [])):
            block = self.blocks[b]
            block.ref_count -= 1
            if block.ref_count == 0:
                if block.block_hash is None:
                    self.empty.append(b)
                else:
                    self.evictable[b] = None
        self.block_hashes.pop(request_id, None)

    def _take_free_block(self) -> int:
        if self.empty:
            b = self.empty.popleft()
        else:  # no empty block left: evict the least recently used cached one
            b, _ = self.evictable.popitem(last=False)
            del self.cached[self.blocks[b].block_hash]
            self.blocks[b].block_hash = None
        self.blocks[b].ref_count = 1
        return b
