"""Tests of exercise 212: chained block hashes and prefix-cache hits."""
import hashlib
import random

import pytest

import submission as sub


def ref_hash(parent, tokens):
    return hashlib.sha256(f"{parent or ''}|{','.join(map(str, tokens))}".encode()).hexdigest()


def test_example():
    h = sub.block_hashes([1, 2, 3, 4, 5], block_size=2)
    assert h == [ref_hash(None, [1, 2]), ref_hash(ref_hash(None, [1, 2]), [3, 4])]
    assert sub.block_hashes([3, 4, 5], 2, parent_hash=h[0]) == h[1:]
    cached = {h[0]: 7, h[1]: 3}
    assert sub.find_cached_prefix([1, 2, 3, 4, 5], 2, cached) == (4, [7, 3])
    assert sub.find_cached_prefix([1, 2, 3, 4], 2, cached) == (2, [7])
    assert sub.find_cached_prefix([9, 2, 3, 4, 5], 2, cached) == (0, [])


def test_edge_lengths():
    assert sub.block_hashes([], 4) == [] and sub.block_hashes([1, 2, 3], 4) == []
    assert len(sub.block_hashes(list(range(8)), 4)) == 2
    assert sub.find_cached_prefix([], 4, {}) == (0, [])
    one = sub.block_hashes([5], 1)
    assert sub.find_cached_prefix([5], 1, {one[0]: 0}) == (0, [])      # the only token must be computed


def test_block_id_zero_is_a_hit():
    h = sub.block_hashes([1, 2, 3, 4, 5], 2)
    assert sub.find_cached_prefix([1, 2, 3, 4, 5], 2, {h[0]: 0, h[1]: 3}) == (4, [0, 3])
    assert sub.find_cached_prefix([1, 2, 3, 4, 5], 2, {h[0]: 5, h[1]: 0}) == (4, [5, 0])


def test_lookup_stops_at_the_first_miss():
    h = sub.block_hashes([1, 2, 3, 4, 5, 6, 7], 2)
    assert sub.find_cached_prefix([1, 2, 3, 4, 5, 6, 7], 2, {h[0]: 4, h[2]: 6}) == (2, [4])
    assert sub.find_cached_prefix([1, 2, 3, 4, 5, 6, 7], 2, {h[1]: 5, h[2]: 6}) == (0, [])


@pytest.mark.parametrize("seed", range(4))
def test_a_chain_continued_from_parent_hash_equals_the_whole_chain(seed):
    rng = random.Random(100 + seed)
    block_size = rng.choice([1, 2, 3, 5])
    tokens = [rng.randrange(50) for _ in range(rng.randint(2, 8) * block_size + rng.randint(0, block_size - 1))]
    repro = {"tokens": tokens, "block_size": block_size}
    whole = sub.block_hashes(tokens, block_size)
    cut = rng.randint(1, len(whole) - 1)            # hash the first `cut` blocks, then the rest from there
    repro["cut"] = cut
    head = sub.block_hashes(tokens[:cut * block_size], block_size)
    assert head + sub.block_hashes(tokens[cut * block_size:], block_size, parent_hash=head[-1]) == whole
    assert sub.block_hashes(tokens, block_size, None) == whole


def test_same_block_after_different_prefix_has_a_different_hash():
    a = sub.block_hashes([1, 2, 7, 7], 2)
    b = sub.block_hashes([3, 4, 7, 7], 2)
    assert a[1] != b[1]


@pytest.mark.parametrize("seed", range(8))
def test_random_prompts_sharing_prefixes(seed):
    rng = random.Random(seed)
    block_size = rng.choice([1, 2, 3, 4, 16])
    base = [rng.randrange(50) for _ in range(rng.randint(1, 6) * block_size + rng.randint(0, block_size - 1))]
    repro = {"base": base, "block_size": block_size}
    hashes = sub.block_hashes(base, block_size)
    parent, want = None, []
    for i in range(len(base) // block_size):
        parent = ref_hash(parent, base[i * block_size:(i + 1) * block_size])
        want.append(parent)
    assert hashes == want
    cached = {h: 100 + i for i, h in enumerate(hashes)}
    # A prompt that shares the first k tokens of base, then diverges.
    k = rng.randint(0, len(base))
    other = base[:k] + [50 + rng.randrange(50) for _ in range(rng.randint(0, 2 * block_size))]
    repro.update(other=other, cached=cached)
    n_hit, blocks = sub.find_cached_prefix(other, block_size, cached)
    full_shared = min(k, len(other) - 1) // block_size if other else 0
    assert n_hit == full_shared * block_size and blocks == [100 + i for i in range(full_shared)]
    # Changing one token changes its block's hash and every later one, never an earlier one.
    if len(hashes) >= 2:
        j = rng.randrange(len(base) // block_size * block_size)
        changed = base[:j] + [base[j] + 1000] + base[j + 1:]
        repro["changed"] = changed
        new = sub.block_hashes(changed, block_size)
        cut = j // block_size
        assert new[:cut] == hashes[:cut] and all(x != y for x, y in zip(new[cut:], hashes[cut:]))
