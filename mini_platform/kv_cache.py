"""Paged KV-cache bookkeeping: which block of the cache holds which token of which request.

The KV cache tensors (per layer, K and V each ``[num_blocks, block_size, num_kv_heads, head_dim]``,
see :func:`mini_platform.model.paged_attention.allocate_kv_caches`) are cut into fixed-size blocks.
This module owns the bookkeeping and never touches the tensors:

- a **block table** per request lists its blocks in token order, so token ``i`` lives in
  ``table[i // block_size]`` at offset ``i % block_size``; its **slot** is ``block * block_size + offset``;
- a :class:`BlockPool` hands blocks out from the front of one free queue and counts references, so
  several requests can share a block (a common prompt prefix);
- **prefix caching**: a full block is named by a hash chained over everything before it
  (:func:`hash_block`, :func:`block_hashes`), so equal hashes mean equal prefixes and a later request
  adopts the cached blocks (:func:`find_cached_prefix`) instead of recomputing them;
- a freed block keeps its cached content while it waits in the free queue, where a later request can
  still hit it; it is **evicted when the pool hands it out again**. Requests free their blocks tail
  first, so the free queue's order is the eviction order: least recently used first, and a prompt's
  head (the part most likely to be shared) after its tail. This is vLLM V1's design.

Allocation that cannot be satisfied returns ``False`` and changes nothing: the scheduler decides
what to do (wait, or preempt a request). Pure Python, no torch.

The module-level functions and :class:`BlockPool` are looked up when called, so a learner's solution
of exercises 210 and 212 can stand in for them (``python practice/judge.py engine``).
"""
from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict
from typing import Sequence


class NoFreeBlocksError(RuntimeError):
    """Not enough free blocks for an allocation."""


class BlockPool:
    """Blocks ``0 .. num_blocks-1`` with reference counts and one free queue, in id order at first.

    ``allocate`` takes blocks from the front of the queue, ``free`` appends the blocks whose count
    drops to 0 at the back, and ``share`` adds references, taking a free block out of the queue (its
    contents are still valid: a prefix-cache hit). Failed calls raise and change nothing.
    """

    def __init__(self, num_blocks: int) -> None:
        self.counts = [0] * num_blocks
        self.free_queue: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))  # first = front

    @property
    def num_free(self) -> int:
        return len(self.free_queue)

    def ref_count(self, block: int) -> int:
        self._check_id(block)
        return self.counts[block]

    def allocate(self, n: int) -> list[int]:
        if n < 0:
            raise ValueError(f"cannot allocate {n} blocks; n must be >= 0")
        if n > len(self.free_queue):
            raise NoFreeBlocksError(f"need {n} blocks, only {len(self.free_queue)} free")
        blocks = [self.free_queue.popitem(last=False)[0] for _ in range(n)]
        for b in blocks:
            self.counts[b] = 1
        return blocks

    def share(self, blocks: list[int]) -> None:
        for b in blocks:
            self._check_id(b)
        for b in blocks:
            if self.counts[b] == 0:
                del self.free_queue[b]
            self.counts[b] += 1

    def free(self, blocks: list[int]) -> None:
        times = Counter(blocks)
        for b, k in times.items():
            self._check_id(b)
            if k > self.counts[b]:
                raise ValueError(f"block {b} freed {k} times but its reference count is {self.counts[b]}")
        last = {b: i for i, b in enumerate(blocks)}
        for b, k in times.items():
            self.counts[b] -= k
        for b in sorted(last, key=last.get):
            if self.counts[b] == 0:
                self.free_queue[b] = None

    def _check_id(self, block: int) -> None:
        if not 0 <= block < len(self.counts):
            raise ValueError(f"block {block} is not in this pool (ids 0..{len(self.counts) - 1})")


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block, chained on the hash of the block before it (None for the first block)."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()


def block_hashes(token_ids: list[int], block_size: int, parent_hash: str | None = None) -> list[str]:
    """The chained hash of each full block of ``token_ids``, in order (a trailing partial block has none).
    The chain continues from ``parent_hash``, the hash of the block just before ``token_ids`` (None: they
    start the request)."""
    hashes, parent = [], parent_hash
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        parent = hash_block(parent, token_ids[start:start + block_size])
        hashes.append(parent)
    return hashes


def find_cached_prefix(token_ids: list[int], block_size: int, cached: dict[str, int]) -> tuple[int, list[int]]:
    """``(tokens hit, block ids)`` of the longest cached prefix, looked up block by block until the first miss.

    At least one token is always left to compute (its logits give the next token), so only blocks lying
    entirely within ``token_ids[:-1]`` can hit: a prompt that is entirely cached recomputes its last block.
    """
    hit, parent = [], None
    for start in range(0, len(token_ids) - block_size, block_size):  # blocks within token_ids[:-1]
        parent = hash_block(parent, token_ids[start:start + block_size])
        if parent not in cached:
            break  # nothing after a miss can hit: its chain runs through the missing block
        hit.append(cached[parent])
    return len(hit) * block_size, hit


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class KVCacheManager:
    """A pool of ``num_blocks`` blocks of ``block_size`` tokens, shared by all requests."""

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks} and {block_size}")
        self.num_blocks, self.block_size = num_blocks, block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.pool = BlockPool(num_blocks)
        self.cached: dict[str, int] = {}                         # block hash -> block id
        self.block_hash: list[str | None] = [None] * num_blocks  # the cached content a block holds, if any
        self.block_tables: dict[str, list[int]] = {}
        self.hashes: dict[str, list[str]] = {}                   # hash chain of each request's full blocks

    # -- queries ------------------------------------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        """Blocks an allocation may take: every block nobody references, cached content or not."""
        return self.pool.num_free

    def blocks_needed(self, num_tokens: int) -> int:
        return cdiv(num_tokens, self.block_size)

    def lookup_prefix(self, token_ids: Sequence[int]) -> list[int]:
        """Blocks holding the longest cached prefix of ``token_ids``, in order. Changes nothing."""
        if not self.enable_prefix_caching:
            return []
        return find_cached_prefix(token_ids, self.block_size, self.cached)[1]

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
        need = max(self.blocks_needed(num_tokens) - len(table or ()) - len(adopt), 0)
        # An adopted block that nobody references waits in the free queue: taking it uses up a free block.
        revived = sum(1 for b in adopt if self.pool.ref_count(b) == 0)
        if need + revived > self.pool.num_free:
            return False
        if adopt:
            self.pool.share(adopt)
        new = self.pool.allocate(need) if need else []
        for b in new:  # handed out again: whatever it cached is overwritten, so it leaves the prefix cache
            if self.block_hash[b] is not None:
                del self.cached[self.block_hash[b]]
                self.block_hash[b] = None
        if table is None:
            table = self.block_tables[request_id] = []
            self.hashes[request_id] = [self.block_hash[b] for b in adopt]
        table += adopt + new
        return True

    def cache_full_blocks(self, request_id: str, token_ids: Sequence[int], num_computed_tokens: int) -> None:
        """Register the request's blocks that became full (their K/V written) in the prefix cache."""
        if not self.enable_prefix_caching:
            return
        table, hashes, bs = self.block_tables[request_id], self.hashes[request_id], self.block_size
        done, full = len(hashes), num_computed_tokens // bs
        if full <= done:
            return
        new = block_hashes(token_ids[done * bs:full * bs], bs, hashes[-1] if hashes else None)
        for i, h in enumerate(new, start=done):
            # Two requests that computed the same block in one step: the first copy stays the cached one.
            if h not in self.cached:
                self.cached[h] = table[i]
                self.block_hash[table[i]] = h
        hashes += new

    def free(self, request_id: str) -> None:
        """Drop the request's references. Its last blocks are freed first, so they are evicted first
        (a prompt's head is the part other requests are most likely to share)."""
        self.pool.free(self.block_tables.pop(request_id, [])[::-1])
        self.hashes.pop(request_id, None)
