"""Tests of exercise 213: reshape_and_cache."""
import pytest
import torch

import submission as sub


def test_example():
    key_cache, value_cache = torch.zeros(2, 4, 1, 2), torch.zeros(2, 4, 1, 2)
    key = torch.tensor([[[1., 1.]], [[2., 2.]], [[3., 3.]]])
    sub.reshape_and_cache(key, -key, key_cache, value_cache, torch.tensor([5, -1, 0], dtype=torch.int32))
    assert key_cache[1, 1].tolist() == [[1., 1.]] and key_cache[0, 0].tolist() == [[3., 3.]]
    assert value_cache[1, 1].tolist() == [[-1., -1.]]
    assert key_cache.abs().sum() == 8 and value_cache.abs().sum() == 8


def test_out_of_range_writes_nothing():
    key_cache, value_cache = torch.zeros(2, 4, 1, 1), torch.zeros(2, 4, 1, 1)
    with pytest.raises(ValueError):
        sub.reshape_and_cache(torch.ones(2, 1, 1), torch.ones(2, 1, 1), key_cache, value_cache,
                              torch.tensor([0, 8], dtype=torch.int32))
    assert not key_cache.any() and not value_cache.any(), "a rejected call must write neither cache"


def test_every_negative_slot_is_padding():
    key_cache, value_cache = torch.zeros(2, 2, 1, 1), torch.zeros(2, 2, 1, 1)
    key = torch.tensor([[[1.]], [[2.]], [[3.]], [[4.]]])
    sub.reshape_and_cache(key, 10 * key, key_cache, value_cache, torch.tensor([1, -2, -4, 2], dtype=torch.int32))
    assert key_cache.flatten().tolist() == [0., 1., 4., 0.], "slots < 0 (not only -1) are padding"
    assert value_cache.flatten().tolist() == [0., 10., 40., 0.]


@pytest.mark.parametrize("key, value, key_cache, value_cache, slots", [
    ((2, 2, 4), (2, 2, 4), (2, 4, 1, 4), (2, 4, 1, 4), 2),      # two KV heads, a cache of one
    ((2, 1, 4), (2, 1, 2), (2, 4, 1, 4), (2, 4, 1, 4), 2),      # value narrower than key
    ((2, 1, 4), (3, 1, 4), (2, 4, 1, 4), (2, 4, 1, 4), 2),      # value with another token count
    ((2, 1, 4), (2, 1, 4), (2, 4, 1, 4), (2, 4, 1, 4), 3),      # a slot_mapping of another length
    ((2, 1, 4), (2, 1, 4), (2, 4, 1, 4), (2, 4, 2, 4), 2),      # value cache of another shape
    ((2, 1, 4), (2, 1, 4), (2, 4, 1, 4), (3, 4, 1, 4), 2),
    ((0, 2, 4), (0, 2, 4), (2, 4, 1, 4), (2, 4, 1, 4), 0),      # an empty step is checked too
])
def test_shape_mismatch(key, value, key_cache, value_cache, slots):
    # shown on failure: reshape_and_cache(torch.ones(*key), torch.ones(*value), torch.zeros(*key_cache),
    #                                     torch.zeros(*value_cache), torch.arange(slots, dtype=torch.int32))
    with pytest.raises(ValueError):
        sub.reshape_and_cache(torch.ones(*key), torch.ones(*value), torch.zeros(*key_cache),
                              torch.zeros(*value_cache), torch.arange(slots, dtype=torch.int32))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.bfloat16])
def test_random_writes(seed, cache_dtype):
    gen = torch.Generator().manual_seed(seed)
    nb, bs, nkv, hd = 64, 16, 2, 8
    T = 700 + seed
    slots = torch.randperm(nb * bs, generator=gen)[:T].to(torch.int32)
    slots[torch.rand(T, generator=gen) < 0.2] = -1
    key, value = torch.randn(T, nkv, hd, generator=gen), torch.randn(T, nkv, hd, generator=gen)
    key_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(cache_dtype)
    value_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(cache_dtype)
    repro = (f"gen = torch.Generator().manual_seed({seed}); slots = torch.randperm({nb * bs}, generator=gen)[:{T}].to(torch.int32); "  # noqa: F841
             f"slots[torch.rand({T}, generator=gen) < 0.2] = -1; "
             f"key, value = torch.randn({T}, {nkv}, {hd}, generator=gen), torch.randn({T}, {nkv}, {hd}, generator=gen); "
             f"key_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({cache_dtype}); "
             f"value_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({cache_dtype}); "
             "reshape_and_cache(key, value, key_cache, value_cache, slots)")
    want_k, want_v = key_cache.clone().view(nb * bs, nkv, hd), value_cache.clone().view(nb * bs, nkv, hd)
    for t, s in enumerate(slots.tolist()):
        if s >= 0:
            want_k[s], want_v[s] = key[t].to(cache_dtype), value[t].to(cache_dtype)
    sub.reshape_and_cache(key, value, key_cache, value_cache, slots)
    assert key_cache.dtype == cache_dtype
    assert torch.equal(key_cache.view(nb * bs, nkv, hd), want_k)
    assert torch.equal(value_cache.view(nb * bs, nkv, hd), want_v)
