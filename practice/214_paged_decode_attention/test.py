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
    repro = [f"gen = torch.Generator().manual_seed({seed})",  # noqa: F841 - shown on failure
             f"lens = torch.randint(1, {5 * bs}, ({B},), generator=gen).to(torch.int32)",
             f"tables = torch.randperm({nb}, generator=gen)[:{B * max_blocks}].view({B}, {max_blocks}).to(torch.int32)",
             f"key_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({dtype})",
             f"value_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({dtype})",
             f"query = torch.randn({B}, {nh}, {hd}, generator=gen).to({dtype})",
             f"out = paged_decode_attention(query, key_cache, value_cache, tables, lens, {hd ** -0.5!r})"]
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, hd ** -0.5)
    assert got.dtype == dtype and got.shape == query.shape
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), reference(query, key_cache, value_cache, tables, lens, hd ** -0.5),
                               atol=tol, rtol=tol)


def test_unused_columns_are_never_read_and_a_full_row_fits():
    gen = torch.Generator().manual_seed(7)
    bs, nkv, nh, hd = 4, 2, 4, 8
    key_cache, value_cache = torch.randn(6, bs, nkv, hd, generator=gen), torch.randn(6, bs, nkv, hd, generator=gen)
    tables = torch.tensor([[4, 1, 5], [2, -1, 10 ** 6], [0, 3, -7]], dtype=torch.int32)
    lens = torch.tensor([3 * bs, 3, bs + 1], dtype=torch.int32)      # row 0 exactly full
    query = torch.randn(3, nh, hd, generator=gen)
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, 0.5)
    safe = tables.clamp(0, 5)
    torch.testing.assert_close(got, reference(query, key_cache, value_cache, safe, lens, 0.5), atol=1e-5, rtol=1e-5)


def test_unwritten_slots_may_hold_nan():
    """The engine allocates its caches with torch.empty: slots past seq_len in the last block may be NaN."""
    gen = torch.Generator().manual_seed(8)
    bs, nkv, nh, hd = 4, 2, 4, 8
    key_cache, value_cache = torch.randn(6, bs, nkv, hd, generator=gen), torch.randn(6, bs, nkv, hd, generator=gen)
    tables = torch.tensor([[4, 1], [2, 0], [3, 5]], dtype=torch.int32)
    lens = torch.tensor([bs + 2, 3, 1], dtype=torch.int32)
    for block, first in ((1, 2), (2, 3), (3, 1)):              # the unwritten tail of each last block
        key_cache[block, first:] = float("nan")
        value_cache[block, first:] = float("nan")
    query = torch.randn(3, nh, hd, generator=gen)
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, 0.5)
    assert not got.isnan().any(), f"NaN from slots past seq_len leaked into the output: {got.isnan().nonzero().tolist()}"
    torch.testing.assert_close(got, reference(query, key_cache, value_cache, tables, lens, 0.5), atol=1e-5, rtol=1e-5)


def test_peaked_bf16_scores_need_fp32_arithmetic():
    """Large scores: rounding them to bf16 moves the softmax weights far more than the output's rounding."""
    gen = torch.Generator().manual_seed(3)
    bs, nkv, nh, hd, n = 16, 2, 4, 64, 250
    nb = 2 * 16
    key_cache = torch.randn(nb, bs, nkv, hd, generator=gen).bfloat16()
    value_cache = torch.randn(nb, bs, nkv, hd, generator=gen).bfloat16()
    query = (16 * torch.randn(2, nh, hd, generator=gen)).bfloat16()
    tables = torch.randperm(nb, generator=gen).view(2, 16).to(torch.int32)
    lens = torch.tensor([n, 256], dtype=torch.int32)
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, hd ** -0.5)
    assert got.dtype == torch.bfloat16
    want = reference(query, key_cache, value_cache, tables, lens, hd ** -0.5)
    torch.testing.assert_close(got.float(), want, atol=1e-2, rtol=8e-3)   # about two bf16 steps
