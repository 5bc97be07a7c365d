"""KV cache manager: reference counts, hash chains, prefix hits, LRU eviction, slot mapping."""
from __future__ import annotations

import random

from mini_platform.kv_cache import KVCacheManager, hash_block


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
    assert [kv.blocks[b].ref_count for b in shared] == [2, 2]
    kv.free("a")
    assert [kv.blocks[b].ref_count for b in shared] == [1, 1]
    assert not set(shared) & set(kv.evictable)     # still in use by b
    kv.free("b")
    assert set(shared) <= set(kv.evictable) and kv.num_free_blocks == 8


def test_fully_cached_prompt_still_computes_its_last_token():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    fill(kv, "a", list(range(8)))
    kv.free("a")
    assert len(kv.lookup_prefix(list(range(8)))) == 1   # the 2nd block is recomputed for its last token
    assert len(kv.lookup_prefix(list(range(9)))) == 2


def test_cached_blocks_evicted_only_when_no_empty_block_is_left_lru_first():
    kv = KVCacheManager(num_blocks=4, block_size=2)
    fill(kv, "a", [1, 2, 3, 4])     # blocks 0, 1 cached
    kv.free("a")
    assert kv.num_free_blocks == 4 and len(kv.evictable) == 2
    assert kv.allocate("b", 4)      # takes the two empty blocks; the cache survives
    assert kv.lookup_prefix([1, 2, 3, 4, 5]) == [0, 1]
    assert kv.allocate("c", 2)      # no empty block left: evict the least recently used one
    # The tail of a freed request goes first, so the shared head of the prompt survives longest.
    assert kv.block_tables["c"] == [1]
    assert kv.lookup_prefix([1, 2, 3, 4, 5]) == [0]
    assert kv.blocks[1].block_hash is None


def test_a_hit_refreshes_recency():
    kv = KVCacheManager(num_blocks=4, block_size=2)
    fill(kv, "a", [1, 2, 0])        # a's first block is cached, its second is partial
    fill(kv, "b", [3, 4, 0])
    kv.free("a"), kv.free("b")      # a's cached block is now the least recently used
    assert fill(kv, "a2", [1, 2, 5]) == kv.block_tables["a2"][:1]   # hit: a's block is recent again
    kv.free("a2")
    assert kv.allocate("c", 6)      # two empty blocks, then one eviction: b's block, not a's
    assert kv.lookup_prefix([1, 2, 7]) != [] and kv.lookup_prefix([3, 4, 7]) == []


def test_failed_allocation_changes_nothing():
    kv = KVCacheManager(num_blocks=4, block_size=4)
    assert kv.allocate("a", 12)
    before = (list(kv.empty), dict(kv.evictable), [b.ref_count for b in kv.blocks])
    assert not kv.allocate("b", 8)
    assert not kv.allocate("a", 17)
    assert "b" not in kv.block_tables and len(kv.block_tables["a"]) == 3
    assert (list(kv.empty), dict(kv.evictable), [b.ref_count for b in kv.blocks]) == before


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
    assert b_block in kv.empty                     # not cached, so it is plain free space


def test_disabled_prefix_caching_never_hits():
    kv = KVCacheManager(num_blocks=4, block_size=2, enable_prefix_caching=False)
    fill(kv, "a", [1, 2, 3])
    kv.free("a")
    assert kv.lookup_prefix([1, 2, 3]) == [] and not kv.cached and len(kv.empty) == 4


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
        assert refs == [b.ref_count for b in kv.blocks]
        unreferenced = [b for b in range(kv.num_blocks) if refs[b] == 0]
        assert sorted(list(kv.empty) + list(kv.evictable)) == unreferenced
        assert all(kv.blocks[b].block_hash is None for b in kv.empty)
        assert {kv.blocks[b].block_hash: b for b in kv.cached.values()} == kv.cached
    assert hits > 20
