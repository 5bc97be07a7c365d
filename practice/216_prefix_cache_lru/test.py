"""Tests of exercise 216: prefix-caching block pool with LRU eviction."""
import hashlib
import random

import pytest

import submission as sub


def h(parent, tokens):
    return hashlib.sha256(f"{parent or ''}|{','.join(map(str, tokens))}".encode()).hexdigest()


def test_example():
    pool = sub.PrefixCachePool(num_blocks=4, block_size=2)
    a = pool.allocate([1, 2, 3, 4, 5])
    assert a == [0, 1, 2]
    assert pool.cached_blocks() == {h(None, [1, 2]): 0, h(h(None, [1, 2]), [3, 4]): 1}
    pool.free(a)
    b = pool.allocate([1, 2, 3, 4, 9])
    assert b == [0, 1, 3]
    with pytest.raises(sub.NoFreeBlocksError):
        pool.allocate([7, 7, 7])
    pool.free(b)
    assert pool.allocate([7, 7, 7]) == [2, 3]
    with pytest.raises(sub.NoFreeBlocksError):
        pool.allocate([5, 5, 5, 5, 5])
    assert pool.allocate([5, 5, 5]) == [1, 0]
    assert pool.cached_blocks() == {h(None, [7, 7]): 2, h(None, [5, 5]): 1}


def test_cached_blocks_is_a_copy():
    pool = sub.PrefixCachePool(num_blocks=4, block_size=2)
    pool.allocate([1, 2, 3])
    pool.cached_blocks().clear()                 # the caller's copy: the pool's cache stays
    assert pool.cached_blocks() == {h(None, [1, 2]): 0}
    assert pool.allocate([1, 2, 9]) == [0, 2], "the cached block [1, 2] still hits"


def test_reviving_an_evictable_hit_counts_against_the_free_blocks():
    pool = sub.PrefixCachePool(num_blocks=2, block_size=2)
    pool.free(pool.allocate([1, 2, 3]))          # block 0 cached ([1,2]), block 1 empty
    held = pool.allocate([8])                    # takes empty block 1
    with pytest.raises(sub.NoFreeBlocksError):
        pool.allocate([1, 2, 3])                 # hit 0 (revived) + 1 new block: only 1 available
    assert pool.num_free == 1 and pool.cached_blocks() == {h(None, [1, 2]): 0}
    pool.free(held)
    assert pool.allocate([1, 2, 3]) == [0, 1]


def test_fully_cached_prompt_recomputes_its_last_block():
    pool = sub.PrefixCachePool(num_blocks=4, block_size=2)
    first = pool.allocate([1, 2, 3, 4])
    second = pool.allocate([1, 2, 3, 4])
    assert first == [0, 1] and second == [0, 2]  # [3, 4] is recomputed in a new block
    assert pool.cached_blocks()[h(h(None, [1, 2]), [3, 4])] == 1   # the first copy keeps the record


class Model:
    """A plain reference: lists instead of queues."""

    def __init__(self, n, bs):
        self.bs, self.counts, self.hash_of = bs, [0] * n, [None] * n
        self.empty, self.evictable, self.cache = list(range(n)), [], {}

    def hashes(self, tokens):
        out, parent = [], None
        for i in range(len(tokens) // self.bs):
            parent = h(parent, tokens[i * self.bs:(i + 1) * self.bs])
            out.append(parent)
        return out

    def allocate(self, tokens):
        hits = []
        for x in self.hashes(tokens[:-1]):
            if x not in self.cache:
                break
            hits.append(self.cache[x])
        need = -(-len(tokens) // self.bs) - len(hits)
        if need + sum(self.counts[b] == 0 for b in hits) > len(self.empty) + len(self.evictable):
            return None
        for b in hits:
            if self.counts[b] == 0:
                self.evictable.remove(b)
            self.counts[b] += 1
        table = list(hits)
        for _ in range(need):
            if self.empty:
                b = self.empty.pop(0)
            else:
                b = self.evictable.pop(0)
                del self.cache[self.hash_of[b]]
                self.hash_of[b] = None
            self.counts[b] = 1
            table.append(b)
        for i, x in enumerate(self.hashes(tokens)):
            if x not in self.cache:
                self.cache[x], self.hash_of[table[i]] = table[i], x
        return table

    def free(self, table):
        for b in reversed(table):
            self.counts[b] -= 1
            if self.counts[b] == 0:
                (self.evictable if self.hash_of[b] else self.empty).append(b)


@pytest.mark.parametrize("seed", range(8))
def test_random_workload_matches_a_reference(seed):
    rng = random.Random(seed)
    n, bs = rng.randint(4, 12), rng.choice([1, 2, 4])
    pool, model = sub.PrefixCachePool(n, bs), Model(n, bs)
    repro = ["from contextlib import suppress", f"pool = PrefixCachePool({n}, {bs})"]   # the calls so far, shown on failure
    prefixes = [[rng.randrange(5) for _ in range(rng.randint(0, 3 * bs))] for _ in range(3)]
    live = []
    for _ in range(120):
        if live and rng.random() < 0.45:
            table = live.pop(rng.randrange(len(live)))
            repro.append(f"pool.free({table})")
            pool.free(table)
            model.free(table)
        else:
            tokens = rng.choice(prefixes) + [rng.randrange(5) for _ in range(rng.randint(1, 2 * bs))]
            want = model.allocate(tokens)
            repro.append(f"with suppress(NoFreeBlocksError): pool.allocate({tokens})" if want is None
                         else f"pool.allocate({tokens})")
            if want is None:
                with pytest.raises(sub.NoFreeBlocksError):
                    pool.allocate(tokens)
            else:
                assert pool.allocate(tokens) == want
                live.append(want)
        assert pool.num_free == len(model.empty) + len(model.evictable)
        assert pool.cached_blocks() == model.cache
