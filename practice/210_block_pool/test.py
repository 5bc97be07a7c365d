"""Tests of exercise 210: block pool with reference counts."""
import random

import pytest

import submission as sub


def state(pool, n):
    return [pool.ref_count(b) for b in range(n)], pool.num_free


def test_example():
    pool = sub.BlockPool(4)
    a = pool.allocate(2)
    assert a == [0, 1]
    pool.share([1])
    pool.free(a)
    assert pool.num_free == 3 and pool.ref_count(0) == 0 and pool.ref_count(1) == 1
    pool.share([0])
    assert pool.ref_count(0) == 1 and pool.num_free == 2
    assert pool.allocate(2) == [2, 3]
    with pytest.raises(sub.NoFreeBlocksError):
        pool.allocate(1)
    with pytest.raises(ValueError):
        pool.free([1, 1])
    assert pool.ref_count(1) == 1 and pool.num_free == 0


def test_error_type():
    assert issubclass(sub.NoFreeBlocksError, RuntimeError)


def test_failed_calls_change_nothing():
    pool = sub.BlockPool(3)
    pool.allocate(2)
    before = state(pool, 3)
    with pytest.raises(sub.NoFreeBlocksError):
        pool.allocate(2)
    with pytest.raises(ValueError):
        pool.allocate(-1)
    with pytest.raises(ValueError):
        pool.share([0, 3])                 # block 3 does not exist: block 0 must not be counted either
    with pytest.raises(ValueError):
        pool.free([0, 1, 1])               # block 1 over-freed: block 0 must not be freed either
    for bad in (3, -1):
        with pytest.raises(ValueError):
            pool.ref_count(bad)
        with pytest.raises(ValueError):
            pool.share([bad])
        with pytest.raises(ValueError):
            pool.free([bad])
    assert state(pool, 3) == before
    assert pool.allocate(0) == []


def test_sharing_a_free_block_takes_it_out_of_the_queue_once():
    pool = sub.BlockPool(4)
    pool.allocate(4)
    pool.free([3, 0, 2])                   # free queue: 3, 0, 2
    pool.share([0, 0])                     # a prefix-cache hit, twice: count 2, out of the queue once
    assert pool.ref_count(0) == 2 and pool.num_free == 2
    assert pool.allocate(2) == [3, 2]      # the others keep their order; block 0 is not handed out
    with pytest.raises(sub.NoFreeBlocksError):
        pool.allocate(1)
    pool.free([0])
    assert pool.num_free == 0 and pool.ref_count(0) == 1
    pool.free([0])
    assert pool.allocate(1) == [0]


def test_free_order():
    pool = sub.BlockPool(6)
    pool.allocate(6)
    pool.share([4, 2])
    pool.free([4, 2, 5, 4, 2, 1])          # last appearances: 5 (idx 2), 4 (3), 2 (4), 1 (5)
    assert pool.allocate(4) == [5, 4, 2, 1]


class Model:
    """A straightforward reference pool for randomized comparison."""

    def __init__(self, n):
        self.queue, self.counts = list(range(n)), [0] * n

    def allocate(self, n):
        if n > len(self.queue):
            return "full"
        got, self.queue = self.queue[:n], self.queue[n:]
        for b in got:
            self.counts[b] = 1
        return got

    def share(self, blocks):
        for b in blocks:
            if self.counts[b] == 0:
                self.queue.remove(b)
            self.counts[b] += 1

    def free(self, blocks):
        if any(blocks.count(b) > self.counts[b] for b in blocks):
            return "error"
        for b in blocks:
            self.counts[b] -= 1
        order = []
        for b in reversed(blocks):
            if b not in order:
                order.insert(0, b)
        self.queue += [b for b in order if self.counts[b] == 0]


@pytest.mark.parametrize("seed", range(6))
def test_random_operations_match_a_reference(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 12)
    pool, model = sub.BlockPool(n), Model(n)
    repro = ["from contextlib import suppress", f"pool = BlockPool({n})"]   # the calls so far, shown on failure
    held = []
    for _ in range(200):
        op = rng.choice(["allocate", "share", "free", "free"])
        if op == "allocate":
            k = rng.randint(0, 4)
            want = model.allocate(k)
            repro.append(f"with suppress(NoFreeBlocksError): pool.allocate({k})" if want == "full" else f"pool.allocate({k})")
            if want == "full":
                with pytest.raises(sub.NoFreeBlocksError):
                    pool.allocate(k)
            else:
                assert pool.allocate(k) == want
                held += want
        else:
            blocks = [rng.randrange(n) for _ in range(rng.randint(1, 3))]
            if held and rng.random() < 0.7:
                blocks = [rng.choice(held) for _ in range(rng.randint(1, 3))]
            want = getattr(model, op)(blocks)
            repro.append(f"with suppress(ValueError): pool.{op}({blocks})" if want == "error" else f"pool.{op}({blocks})")
            if want == "error":
                with pytest.raises(ValueError):
                    getattr(pool, op)(blocks)
            else:
                getattr(pool, op)(blocks)
        assert [pool.ref_count(b) for b in range(n)] == model.counts
        assert pool.num_free == len(model.queue)
    assert pool.allocate(len(model.queue)) == model.queue
