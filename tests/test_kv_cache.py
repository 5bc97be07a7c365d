"""KV cache manager: the block pool, hash chains, prefix hits, eviction from the free queue, slot mapping."""
from __future__ import annotations

import random

import pytest

from mini_platform import kv_cache
from mini_platform.kv_cache import BlockPool, KVCacheManager, NoFreeBlocksError, block_hashes, find_cached_prefix, hash_block


def fill(kv: KVCacheManager, rid: str, tokens: list[int]) -> list[int]:
    """Admit ``tokens`` as a request would: adopt the cached prefix, allocate, mark everything computed."""
    prefix = kv.lookup_prefix(tokens)
    assert kv.allocate(rid, len(tokens), prefix)
    kv.cache_full_blocks(rid, tokens, len(tokens))
    return prefix


def test_slot_mapping_follows_block_table():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    kv.block_tables["r"] = [3, 1, 6]
    assert kv.slot_mapping("r", 0, 6) == [12, 13, 14, 15, 4, 5]
    assert kv.slot_mapping("r", 7, 10) == [7, 24, 25]


def test_hash_chain_depends_on_everything_before():
    a = hash_block(None, [1, 2])
    assert hash_block(a, [3, 4]) != hash_block(hash_block(None, [9, 9]), [3, 4])
    assert hash_block(None, [1, 2]) == a
    assert hash_block(None, [1, 2]) != hash_block(None, [2, 1])
    # Same block tokens after a different prefix: no hit.
    kv = KVCacheManager(num_blocks=8, block_size=2)
    fill(kv, "a", [1, 2, 3, 4, 5])
    assert kv.lookup_prefix([9, 9, 3, 4, 5]) == []
    assert kv.lookup_prefix([1, 2, 3, 4, 7]) == kv.block_tables["a"][:2]
    assert kv.lookup_prefix([1, 2, 3, 9, 7]) == kv.block_tables["a"][:1]


def test_shared_prefix_reference_counts():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    fill(kv, "a", list(range(10)))           # 2 full blocks + 2 tokens
    shared = kv.lookup_prefix(list(range(8)) + [50, 51, 52])
    assert shared == kv.block_tables["a"][:2]
    assert kv.allocate("b", 11, shared)
    assert kv.block_tables["b"][:2] == shared and kv.block_tables["b"][2] not in kv.block_tables["a"]
    assert [kv.pool.ref_count(b) for b in shared] == [2, 2]
    kv.free("a")
    assert [kv.pool.ref_count(b) for b in shared] == [1, 1]
    assert not set(shared) & set(kv.pool.free_queue)     # still in use by b
    kv.free("b")
    assert set(shared) <= set(kv.pool.free_queue) and kv.num_free_blocks == 8
    assert all(kv.block_hash[b] is not None for b in shared)   # free, and still cached


def test_fully_cached_prompt_still_computes_its_last_token():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    fill(kv, "a", list(range(8)))
    kv.free("a")
    assert len(kv.lookup_prefix(list(range(8)))) == 1   # the 2nd block is recomputed for its last token
    assert len(kv.lookup_prefix(list(range(9)))) == 2


def free_queue(kv: KVCacheManager) -> list[int]:
    return list(kv.pool.free_queue)


def test_freed_blocks_stay_cached_until_handed_out_tail_first():
    kv = KVCacheManager(num_blocks=4, block_size=2)
    fill(kv, "a", [1, 2, 3, 4])     # blocks 0, 1 cached
    kv.free("a")                    # tail first: the prompt's head is evicted last
    assert kv.num_free_blocks == 4 and free_queue(kv) == [2, 3, 1, 0]
    assert kv.allocate("b", 4)      # the front of the queue: the two blocks that never held anything
    assert kv.lookup_prefix([1, 2, 3, 4, 5]) == [0, 1]
    assert kv.allocate("c", 2)      # block 1 is handed out again: its cached content is evicted
    assert kv.block_tables["c"] == [1]
    assert kv.lookup_prefix([1, 2, 3, 4, 5]) == [0]
    assert kv.block_hash[1] is None and list(kv.cached.values()) == [0]


def test_one_free_queue_evicts_in_queue_order_even_when_an_empty_block_waits_behind():
    # vLLM V1's rule: the free queue's order is the eviction order, whatever a block holds.
    kv = KVCacheManager(num_blocks=3, block_size=2)
    fill(kv, "a", [1, 2, 3, 4])     # blocks 0, 1 cached
    kv.free("a")
    assert kv.allocate("x", 2)      # block 2, which never held anything
    kv.free("x")                    # ... now waits behind the cached blocks
    assert free_queue(kv) == [1, 0, 2]
    assert kv.allocate("y", 2) and kv.block_tables["y"] == [1]
    assert kv.lookup_prefix([1, 2, 3, 4, 5]) == [0]


def test_a_hit_refreshes_recency():
    kv = KVCacheManager(num_blocks=4, block_size=2)
    fill(kv, "a", [1, 2, 0])        # a's first block is cached, its second is partial
    fill(kv, "b", [3, 4, 0])
    kv.free("a"), kv.free("b")      # a's cached block is now the least recently used
    assert fill(kv, "a2", [1, 2, 5]) == kv.block_tables["a2"][:1]   # hit: the block leaves the free queue
    assert kv.block_tables["a2"][0] not in kv.pool.free_queue
    kv.free("a2")                   # ... and comes back at the back: recent again
    assert kv.allocate("c", 6)      # three blocks from the front: b's cached block goes, a's stays
    assert kv.lookup_prefix([1, 2, 7]) != [] and kv.lookup_prefix([3, 4, 7]) == []


def test_failed_allocation_changes_nothing():
    kv = KVCacheManager(num_blocks=4, block_size=4)
    assert kv.allocate("a", 12)
    before = (free_queue(kv), [kv.pool.ref_count(b) for b in range(4)])
    assert not kv.allocate("b", 8)
    assert not kv.allocate("a", 17)
    assert "b" not in kv.block_tables and len(kv.block_tables["a"]) == 3
    assert (free_queue(kv), [kv.pool.ref_count(b) for b in range(4)]) == before


def test_reviving_a_cached_block_uses_up_a_free_block():
    kv = KVCacheManager(num_blocks=3, block_size=2)
    fill(kv, "a", [1, 2, 3, 4, 5])   # 3 blocks, two of them cached
    kv.free("a")
    prefix = kv.lookup_prefix([1, 2, 3, 4, 9, 9, 9])
    assert prefix == [0, 1]
    assert not kv.allocate("b", 8, prefix)     # 2 revived + 2 new > 3 free
    assert kv.allocate("b", 6, prefix)         # 2 revived + 1 new
    assert kv.num_free_blocks == 0


def test_same_block_computed_twice_keeps_one_cached_copy():
    kv = KVCacheManager(num_blocks=4, block_size=2)
    assert kv.allocate("a", 3) and kv.allocate("b", 3)   # admitted together: neither hits
    kv.cache_full_blocks("a", [7, 8, 9], 3)
    kv.cache_full_blocks("b", [7, 8, 9], 3)
    assert kv.lookup_prefix([7, 8, 1]) == [kv.block_tables["a"][0]]
    b_block = kv.block_tables["b"][0]
    kv.free("b")
    assert b_block in kv.pool.free_queue and kv.block_hash[b_block] is None   # not cached: plain free space


def test_disabled_prefix_caching_never_hits():
    kv = KVCacheManager(num_blocks=4, block_size=2, enable_prefix_caching=False)
    fill(kv, "a", [1, 2, 3])
    kv.free("a")
    assert kv.lookup_prefix([1, 2, 3]) == [] and not kv.cached and kv.num_free_blocks == 4


def test_random_operations_keep_the_pool_consistent():
    rng = random.Random(1234)
    kv = KVCacheManager(num_blocks=12, block_size=3)
    live: dict[str, list[int]] = {}
    hits = 0
    for step in range(400):
        if live and rng.random() < 0.4:
            rid = rng.choice(sorted(live))
            kv.free(rid)
            del live[rid]
        else:
            head = rng.choice([[1, 2, 3, 4, 5, 6], [7, 8, 9], []])
            tokens = head + [rng.randrange(20) for _ in range(rng.randrange(1, 8))]
            rid = f"r{step}"
            prefix = kv.lookup_prefix(tokens)
            if kv.allocate(rid, len(tokens), prefix):
                hits += len(prefix)
                kv.cache_full_blocks(rid, tokens, len(tokens))
                live[rid] = tokens
        refs = [0] * kv.num_blocks
        for rid, table in kv.block_tables.items():
            assert len(table) == -(-len(live[rid]) // 3)
            for b in table:
                refs[b] += 1
        assert refs == [kv.pool.ref_count(b) for b in range(kv.num_blocks)]
        unreferenced = [b for b in range(kv.num_blocks) if refs[b] == 0]
        assert sorted(kv.pool.free_queue) == unreferenced
        assert {kv.block_hash[b]: b for b in kv.cached.values()} == kv.cached
        assert sum(h is not None for h in kv.block_hash) == len(kv.cached)
    assert hits > 20


def test_block_pool_queue_sharing_and_failures():
    pool = BlockPool(4)
    a = pool.allocate(2)
    assert a == [0, 1]
    pool.share([1])
    pool.free(a)                              # block 0 -> back of the queue; block 1: 2 -> 1
    assert pool.num_free == 3 and pool.ref_count(1) == 1
    pool.share([0, 0])                        # a free block leaves the queue once and gains two references
    assert pool.num_free == 2 and pool.ref_count(0) == 2
    assert pool.allocate(2) == [2, 3]
    with pytest.raises(NoFreeBlocksError):
        pool.allocate(1)
    before = [pool.ref_count(b) for b in range(4)]
    for bad in (lambda: pool.free([1, 1]), lambda: pool.share([0, 4]), lambda: pool.allocate(-1)):
        with pytest.raises(ValueError):
            bad()
    assert [pool.ref_count(b) for b in range(4)] == before and pool.num_free == 0
    pool.free([3, 0, 2, 0, 1])                # reaching 0, ordered by last appearance: 3, 2, 0, 1
    assert pool.allocate(4) == [3, 2, 0, 1]


def test_block_hashes_and_find_cached_prefix():
    h = block_hashes([1, 2, 3, 4, 5], 2)
    assert h == [hash_block(None, [1, 2]), hash_block(hash_block(None, [1, 2]), [3, 4])]
    assert block_hashes([3, 4, 5], 2, parent_hash=h[0]) == h[1:]       # a chain continued where it stopped
    cached = {h[0]: 7, h[1]: 3}
    assert find_cached_prefix([1, 2, 3, 4, 5], 2, cached) == (4, [7, 3])
    assert find_cached_prefix([1, 2, 3, 4], 2, cached) == (2, [7])       # the last token is always computed
    assert find_cached_prefix([9, 2, 3, 4, 5], 2, cached) == (0, [])


def test_the_manager_calls_the_parts_through_the_module(monkeypatch):
    """Exercises 210 and 212 stand in for these names (judge.py engine): the manager must look them up
    when it calls them."""
    calls = {name: 0 for name in ("BlockPool", "block_hashes", "find_cached_prefix")}
    for name in calls:
        original = getattr(kv_cache, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)
        monkeypatch.setattr(kv_cache, name, counted)
    kv = KVCacheManager(num_blocks=4, block_size=2)
    fill(kv, "a", [1, 2, 3])
    assert all(calls.values()), calls
