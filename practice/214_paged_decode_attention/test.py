"""Tests of exercise 214: paged decode attention."""
import math

import pytest
import torch

import submission as sub


def test_example():
    key_cache, value_cache = torch.zeros(3, 1, 1, 2), torch.zeros(3, 1, 1, 2)
    key_cache[2, 0, 0] = torch.tensor([1., 0.]); value_cache[2, 0, 0] = torch.tensor([4., 0.])
    key_cache[0, 0, 0] = torch.tensor([0., 1.]); value_cache[0, 0, 0] = torch.tensor([0., 8.])
    value_cache[1] = 50.0
    query = torch.tensor([[[math.log(3.), 0.], [0., 0.]]])
    out = sub.paged_decode_attention(query, key_cache, value_cache, torch.tensor([[2, 0, 1]], dtype=torch.int32),
                                     torch.tensor([2], dtype=torch.int32), scale=1.0)
    assert torch.allclose(out, torch.tensor([[[3., 2.], [2., 4.]]]), atol=1e-5)


def test_bad_input():
    cache = torch.zeros(2, 4, 2, 8)
    with pytest.raises(ValueError):
        sub.paged_decode_attention(torch.zeros(1, 3, 8), cache, cache, torch.zeros(1, 2, dtype=torch.int32),
                                   torch.tensor([3], dtype=torch.int32), 1.0)
    with pytest.raises(ValueError):
        sub.paged_decode_attention(torch.zeros(1, 4, 8), cache, cache, torch.zeros(1, 2, dtype=torch.int32),
                                   torch.tensor([9], dtype=torch.int32), 1.0)


def reference(query, key_cache, value_cache, block_tables, seq_lens, scale):
    """Token by token through the block table, then SDPA per head."""
    bs, nkv = key_cache.shape[1], key_cache.shape[2]
    group = query.shape[1] // nkv
    out = []
    for b, n in enumerate(seq_lens.tolist()):
        idx = [(int(block_tables[b, p // bs]), p % bs) for p in range(n)]
        k = torch.stack([key_cache[i, j] for i, j in idx]).float()
        v = torch.stack([value_cache[i, j] for i, j in idx]).float()
        heads = [torch.nn.functional.scaled_dot_product_attention(
            query[b, h].float()[None, None], k[:, h // group][None], v[:, h // group][None], scale=scale)[0, 0]
            for h in range(query.shape[1])]
        out.append(torch.stack(heads))
    return torch.stack(out)


@pytest.mark.parametrize("seed", range(6))
def test_random_ragged_batches(seed):
    gen = torch.Generator().manual_seed(seed)
    nh, nkv = [(4, 4), (6, 2), (4, 1), (8, 2), (3, 3), (6, 1)][seed]
    bs, hd, B = [4, 16][seed % 2], 8, 3 + seed % 3
    lens = torch.randint(1, 5 * bs, (B,), generator=gen).to(torch.int32)
    max_blocks = -(-int(lens.max()) // bs) + 1
    nb = B * max_blocks
    tables = torch.randperm(nb, generator=gen)[:B * max_blocks].view(B, max_blocks).to(torch.int32)
    dtype = [torch.float32, torch.bfloat16][seed % 2]
    key_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(dtype)
    value_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(dtype)
    query = torch.randn(B, nh, hd, generator=gen).to(dtype)
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, hd ** -0.5)
    assert got.dtype == dtype and got.shape == query.shape
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), reference(query, key_cache, value_cache, tables, lens, hd ** -0.5),
                               atol=tol, rtol=tol)
