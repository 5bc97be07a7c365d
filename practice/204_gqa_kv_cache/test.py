"""Tests of exercise 204: GQA attention and the contiguous KV cache."""
import math

import pytest
import torch

import submission as sub


def naive(q, k, v, offset):
    """One query, one head at a time, straight from the definition (float64)."""
    t, nh, hd = q.shape
    group = nh // k.shape[1]
    out = torch.zeros(t, nh, hd, dtype=torch.float64)
    for i in range(t):
        for h in range(nh):
            kv = h // group
            scores = [float(q[i, h].double() @ k[j, kv].double()) / math.sqrt(hd) for j in range(offset + i + 1)]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = sum(weights)
            out[i, h] = sum(w / total * v[j, kv].double() for j, w in enumerate(weights))
    return out


def test_example():
    cache = sub.KVCache(max_len=8, num_kv_heads=1, head_dim=2)
    k = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])
    v = torch.tensor([[[10.0, 0.0]], [[0.0, 20.0]]])
    out = sub.attention_step(cache, torch.zeros(2, 2, 2), k, v)
    torch.testing.assert_close(out, torch.tensor([[[10.0, 0.0]] * 2, [[5.0, 10.0]] * 2]))
    assert cache.length == 2


def test_query_head_h_reads_kv_head_h_div_group():
    nh, nkv, hd = 6, 3, 4
    v = torch.arange(nkv, dtype=torch.float32)[None, :, None].expand(5, nkv, hd).contiguous()
    gen = torch.Generator().manual_seed(0)
    out = sub.gqa_attention(torch.randn(2, nh, hd, generator=gen), torch.randn(5, nkv, hd, generator=gen), v, 3)
    for h in range(nh):
        assert torch.allclose(out[:, h], torch.full((2, hd), float(h // 2))), h


@pytest.mark.parametrize("nh, nkv, hd", [(4, 4, 8), (8, 2, 16), (6, 1, 8), (3, 1, 4)])
def test_against_the_definition(nh, nkv, hd):
    for t, offset in ((5, 0), (1, 6), (3, 4)):
        seed = 204 + nh * nkv + 100 * t
        gen = torch.Generator().manual_seed(seed)
        repro = (f"gen = torch.Generator().manual_seed({seed}); q = torch.randn({t}, {nh}, {hd}, generator=gen); "  # noqa: F841
                 f"k, v = torch.randn({offset + t}, {nkv}, {hd}, generator=gen), torch.randn({offset + t}, {nkv}, {hd}, generator=gen); "
                 f"out = gqa_attention(q, k, v, {offset})")
        q = torch.randn(t, nh, hd, generator=gen)
        k, v = torch.randn(offset + t, nkv, hd, generator=gen), torch.randn(offset + t, nkv, hd, generator=gen)
        out = sub.gqa_attention(q, k, v, offset)
        assert out.shape == (t, nh, hd) and out.dtype == torch.float32
        torch.testing.assert_close(out.double(), naive(q, k, v, offset), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("t, offset, length", [(1, 2, 6), (3, 1, 7)])
def test_keys_past_the_last_query_are_not_seen(t, offset, length):
    """k and v may hold more rows than offset + T: query i still sees keys 0 .. offset + i only."""
    seed = 2040 + t
    gen = torch.Generator().manual_seed(seed)
    repro = (f"gen = torch.Generator().manual_seed({seed}); q = torch.randn({t}, 4, 8, generator=gen); "  # noqa: F841
             f"k, v = torch.randn({length}, 2, 8, generator=gen), torch.randn({length}, 2, 8, generator=gen); "
             f"out = gqa_attention(q, k, v, {offset})")
    q = torch.randn(t, 4, 8, generator=gen)
    k, v = torch.randn(length, 2, 8, generator=gen), torch.randn(length, 2, 8, generator=gen)
    torch.testing.assert_close(sub.gqa_attention(q, k, v, offset).double(), naive(q, k, v, offset),
                               atol=1e-5, rtol=1e-5)


def test_output_has_the_querys_dtype_over_a_bf16_cache():
    gen = torch.Generator().manual_seed(12)
    cache = sub.KVCache(4, 1, 8, dtype=torch.bfloat16)
    q, k, v = torch.randn(2, 2, 8, generator=gen), torch.randn(2, 1, 8, generator=gen), torch.randn(2, 1, 8, generator=gen)
    out = sub.attention_step(cache, q, k, v)
    assert out.dtype == torch.float32, f"q is float32, the cache bfloat16: the output is {out.dtype}"
    torch.testing.assert_close(out.double(), naive(q, k.bfloat16().float(), v.bfloat16().float(), 0),
                               atol=1e-5, rtol=1e-5)


def test_bad_head_counts():
    with pytest.raises(ValueError):
        sub.gqa_attention(torch.zeros(1, 6, 4), torch.zeros(1, 4, 4), torch.zeros(1, 4, 4), 0)


def test_chunked_prefill_and_decode_match_one_prefill():
    gen = torch.Generator().manual_seed(11)
    nh, nkv, hd, n = 8, 2, 16, 12
    q, k, v = torch.randn(n, nh, hd, generator=gen), torch.randn(n, nkv, hd, generator=gen), torch.randn(n, nkv, hd, generator=gen)
    full = sub.attention_step(sub.KVCache(n, nkv, hd), q, k, v)
    cache, pieces = sub.KVCache(n, nkv, hd), []
    for start, end in ((0, 5), (5, 9), (9, 10), (10, 11), (11, 12)):
        pieces.append(sub.attention_step(cache, q[start:end], k[start:end], v[start:end]))
        assert cache.length == end
    torch.testing.assert_close(torch.cat(pieces), full, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(full.double(), naive(q, k, v, 0), atol=1e-5, rtol=1e-5)


def test_overflow_changes_nothing():
    cache = sub.KVCache(4, 1, 2)
    keys, _ = cache.append(torch.ones(3, 1, 2), torch.ones(3, 1, 2))
    assert keys.shape == (3, 1, 2)
    with pytest.raises(ValueError):
        cache.append(torch.full((2, 1, 2), 7.0), torch.full((2, 1, 2), 7.0))
    assert cache.length == 3
    keys, values = cache.append(torch.zeros(1, 1, 2), torch.zeros(1, 1, 2))
    assert keys.shape == (4, 1, 2) and not (keys == 7).any() and not (values == 7).any()


def test_bfloat16_softmax_in_float32():
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(4, 4, 64, generator=gen) * 4 for _ in range(3))
    out = sub.gqa_attention(q.bfloat16(), k[:, :2].bfloat16(), v[:, :2].bfloat16(), 0)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), naive(q.bfloat16().float(), k[:, :2].bfloat16().float(),
                                                   v[:, :2].bfloat16().float(), 0), atol=0.1, rtol=0.02)


def test_peaked_bf16_scores_need_float32():
    """Large scores: rounding them to bf16 moves the softmax weights far more than the output's rounding."""
    gen = torch.Generator().manual_seed(9)
    q = (16 * torch.randn(6, 4, 64, generator=gen)).bfloat16()
    k, v = torch.randn(40, 2, 64, generator=gen).bfloat16(), torch.randn(40, 2, 64, generator=gen).bfloat16()
    out = sub.gqa_attention(q, k, v, 34)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), naive(q.float(), k.float(), v.float(), 34), atol=1e-2, rtol=8e-3)


def test_cache_stores_in_its_dtype():
    cache = sub.KVCache(4, 1, 2, dtype=torch.bfloat16)
    k = torch.tensor([[[1.001, -2.3]], [[0.1, 7.7]]])
    keys, values = cache.append(k, -k)
    assert keys.dtype == values.dtype == torch.bfloat16
    assert torch.equal(keys, k.bfloat16()) and torch.equal(values, (-k).bfloat16())
