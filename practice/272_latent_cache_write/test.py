"""Tests of exercise 272: concat_and_cache_mla."""
import pytest
import torch

import submission as sub


def test_example():
    kv_c_cache, k_pe_cache = torch.zeros(2, 4, 1, 3), torch.zeros(2, 4, 1, 2)
    kv_c = torch.tensor([[1., 1., 1.], [2., 2., 2.], [3., 3., 3.]])
    k_pe = torch.tensor([[10., 10.], [20., 20.], [30., 30.]])
    result = sub.concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, torch.tensor([5, -1, 0], dtype=torch.int32))
    assert result is None
    assert kv_c_cache[1, 1].tolist() == [[1., 1., 1.]] and k_pe_cache[1, 1].tolist() == [[10., 10.]]
    assert kv_c_cache[0, 0].tolist() == [[3., 3., 3.]] and k_pe_cache[0, 0].tolist() == [[30., 30.]]
    assert kv_c_cache.sum() == 12 and k_pe_cache.sum() == 80, "token 1 (slot -1) must be written nowhere"


def test_block_and_offset():
    # block_size 3: slot 7 = block 2, offset 1; slot 3 = block 1, offset 0; slot 2 = block 0, offset 2
    kv_c_cache, k_pe_cache = torch.zeros(3, 3, 1, 2), torch.zeros(3, 3, 1, 1)
    kv_c = torch.tensor([[7., 7.], [3., 3.], [2., 2.]])
    sub.concat_and_cache_mla(kv_c, kv_c[:, :1] * 10, kv_c_cache, k_pe_cache, torch.tensor([7, 3, 2], dtype=torch.int32))
    assert kv_c_cache[:, :, 0, 0].tolist() == [[0., 0., 2.], [3., 0., 0.], [0., 7., 0.]]
    assert k_pe_cache[:, :, 0, 0].tolist() == [[0., 0., 20.], [30., 0., 0.], [0., 70., 0.]]


def test_every_negative_slot_is_padding():
    kv_c_cache, k_pe_cache = torch.zeros(2, 2, 1, 1), torch.zeros(2, 2, 1, 1)
    kv_c = torch.tensor([[1.], [2.], [3.], [4.]])
    sub.concat_and_cache_mla(kv_c, 10 * kv_c, kv_c_cache, k_pe_cache, torch.tensor([1, -2, -4, 2], dtype=torch.int32))
    assert kv_c_cache.flatten().tolist() == [0., 1., 4., 0.], "slots < 0 (not only -1) are padding"
    assert k_pe_cache.flatten().tolist() == [0., 10., 40., 0.]


def test_padding_does_not_touch_other_slots():
    # NaN in a padding row must not reach the cache, whatever slot it would have been
    kv_c_cache, k_pe_cache = torch.full((2, 2, 1, 2), 5.), torch.full((2, 2, 1, 1), 5.)
    kv_c = torch.tensor([[float("nan")] * 2, [1., 1.]])
    k_pe = torch.tensor([[float("nan")], [2.]])
    sub.concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, torch.tensor([-1, 3], dtype=torch.int32))
    assert kv_c_cache.flatten().tolist() == [5., 5., 5., 5., 5., 5., 1., 1.]
    assert k_pe_cache.flatten().tolist() == [5., 5., 5., 2.]


def test_out_of_range_writes_nothing():
    kv_c_cache, k_pe_cache = torch.zeros(2, 4, 1, 2), torch.zeros(2, 4, 1, 1)
    for slots in ([0, 8], [8, 0], [-1, 100]):
        repro = {"slot_mapping": slots}  # noqa: F841
        with pytest.raises(ValueError):
            sub.concat_and_cache_mla(torch.ones(2, 2), torch.ones(2, 1), kv_c_cache, k_pe_cache,
                                     torch.tensor(slots, dtype=torch.int32))
        assert not kv_c_cache.any() and not k_pe_cache.any(), "a rejected call must write neither cache"
    sub.concat_and_cache_mla(torch.ones(1, 2), torch.ones(1, 1), kv_c_cache, k_pe_cache,
                             torch.tensor([7], dtype=torch.int32))       # the last slot is fine
    assert kv_c_cache[1, 3].tolist() == [[1., 1.]]


@pytest.mark.parametrize("kv_c_dtype, kv_c_cache_dtype, k_pe_cache_dtype", [
    (torch.float32, torch.bfloat16, torch.bfloat16),
    (torch.bfloat16, torch.float32, torch.float32),
    (torch.float32, torch.bfloat16, torch.float32),      # each cache keeps its own dtype
    (torch.float32, torch.float16, torch.bfloat16),
])
def test_dtype_conversion(kv_c_dtype, kv_c_cache_dtype, k_pe_cache_dtype):
    g = torch.Generator().manual_seed(0)
    kv_c, k_pe = torch.randn(3, 4, generator=g).to(kv_c_dtype), torch.randn(3, 2, generator=g).to(kv_c_dtype)
    kv_c_cache, k_pe_cache = torch.zeros(2, 2, 1, 4, dtype=kv_c_cache_dtype), torch.zeros(2, 2, 1, 2, dtype=k_pe_cache_dtype)
    sub.concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, torch.tensor([3, 0, 1], dtype=torch.int32))
    assert kv_c_cache.dtype == kv_c_cache_dtype and k_pe_cache.dtype == k_pe_cache_dtype
    assert torch.equal(kv_c_cache.view(4, 4)[[3, 0, 1]], kv_c.to(kv_c_cache_dtype))
    assert torch.equal(k_pe_cache.view(4, 2)[[3, 0, 1]], k_pe.to(k_pe_cache_dtype))


@pytest.mark.parametrize("kv_c, k_pe, kv_c_cache, k_pe_cache, slots", [
    ((2, 8), (2, 4), (3, 4, 1, 8), (3, 4, 2, 4), 2),       # a third dimension of 2
    ((2, 8), (2, 4), (3, 4, 2, 8), (3, 4, 2, 4), 2),
    ((2, 8), (2, 4), (3, 4, 8), (3, 4, 1, 4), 2),          # a 3-D cache
    ((2, 8), (2, 4), (3, 4, 1, 8), (3, 2, 1, 4), 2),       # the caches' first dimensions differ
    ((2, 8), (2, 4), (3, 4, 1, 8), (2, 4, 1, 4), 2),
    ((2, 6), (2, 4), (3, 4, 1, 8), (3, 4, 1, 4), 2),       # kv_c narrower than the cache
    ((2, 8), (2, 8), (3, 4, 1, 8), (3, 4, 1, 4), 2),       # k_pe as wide as kv_c
    ((2, 8), (3, 4), (3, 4, 1, 8), (3, 4, 1, 4), 2),       # k_pe with another token count
    ((2, 8), (2, 4), (3, 4, 1, 8), (3, 4, 1, 4), 3),       # a slot_mapping of another length
    ((2, 1, 8), (2, 4), (3, 4, 1, 8), (3, 4, 1, 4), 2),    # kv_c with a head dimension
    ((0, 8), (0, 4), (3, 4, 1, 8), (3, 4, 2, 4), 0),       # an empty step is checked too
    ((0, 6), (0, 4), (3, 4, 1, 8), (3, 4, 1, 4), 0),
])
def test_shape_mismatch(kv_c, k_pe, kv_c_cache, k_pe_cache, slots):
    repro = (f"concat_and_cache_mla(torch.ones{kv_c}, torch.ones{k_pe}, torch.zeros{kv_c_cache}, "  # noqa: F841
             f"torch.zeros{k_pe_cache}, torch.arange({slots}, dtype=torch.int32))")
    with pytest.raises(ValueError):
        sub.concat_and_cache_mla(torch.ones(*kv_c), torch.ones(*k_pe), torch.zeros(*kv_c_cache),
                                 torch.zeros(*k_pe_cache), torch.arange(slots, dtype=torch.int32))


def test_empty_step_writes_nothing():
    kv_c_cache, k_pe_cache = torch.zeros(2, 2, 1, 3), torch.zeros(2, 2, 1, 2)
    assert sub.concat_and_cache_mla(torch.zeros(0, 3), torch.zeros(0, 2), kv_c_cache, k_pe_cache,
                                    torch.zeros(0, dtype=torch.int32)) is None
    assert not kv_c_cache.any() and not k_pe_cache.any()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.bfloat16])
def test_random_writes(seed, cache_dtype):
    gen = torch.Generator().manual_seed(seed)
    nb, bs, L, R = 32, [1, 4, 16, 5][seed], 24, 8
    T = nb * bs // 2 + seed
    slots = torch.randperm(nb * bs, generator=gen)[:T].to(torch.int32)
    slots[torch.rand(T, generator=gen) < 0.2] = -1
    kv_c, k_pe = torch.randn(T, L, generator=gen), torch.randn(T, R, generator=gen)
    kv_c_cache = torch.randn(nb, bs, 1, L, generator=gen).to(cache_dtype)
    k_pe_cache = torch.randn(nb, bs, 1, R, generator=gen).to(cache_dtype)
    repro = (f"gen = torch.Generator().manual_seed({seed}); slots = torch.randperm({nb * bs}, generator=gen)[:{T}].to(torch.int32); "  # noqa: F841
             f"slots[torch.rand({T}, generator=gen) < 0.2] = -1; "
             f"kv_c, k_pe = torch.randn({T}, {L}, generator=gen), torch.randn({T}, {R}, generator=gen); "
             f"kv_c_cache = torch.randn({nb}, {bs}, 1, {L}, generator=gen).to({cache_dtype}); "
             f"k_pe_cache = torch.randn({nb}, {bs}, 1, {R}, generator=gen).to({cache_dtype}); "
             "concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, slots)")
    want_c, want_pe = kv_c_cache.clone(), k_pe_cache.clone()
    for t, s in enumerate(slots.tolist()):
        if s >= 0:
            want_c[s // bs, s % bs, 0] = kv_c[t].to(cache_dtype)
            want_pe[s // bs, s % bs, 0] = k_pe[t].to(cache_dtype)
    sub.concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, slots)
    assert kv_c_cache.dtype == cache_dtype and k_pe_cache.dtype == cache_dtype
    assert torch.equal(kv_c_cache, want_c), "kv_c_cache differs"
    assert torch.equal(k_pe_cache, want_pe), "k_pe_cache differs"
