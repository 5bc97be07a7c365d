"""Tests of exercise 215: a Triton paged decode kernel (in the Triton interpreter without a GPU)."""
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
    torch.testing.assert_close(out, torch.tensor([[[3., 2.], [2., 4.]]]))


def reference(query, key_cache, value_cache, block_tables, seq_lens, scale):
    bs, group = key_cache.shape[1], query.shape[1] // key_cache.shape[2]
    out = torch.zeros(query.shape)
    for b, n in enumerate(seq_lens.tolist()):
        idx = [(int(block_tables[b, p // bs]), p % bs) for p in range(n)]
        k = torch.stack([key_cache[i, j] for i, j in idx]).float().repeat_interleave(group, 1)
        v = torch.stack([value_cache[i, j] for i, j in idx]).float().repeat_interleave(group, 1)
        w = (torch.einsum("hd,nhd->hn", query[b].float(), k) * scale).softmax(-1)
        out[b] = torch.einsum("hn,nhd->hd", w, v)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_random_batches(seed):
    gen = torch.Generator().manual_seed(seed)
    nh, nkv = [(2, 2), (4, 2), (3, 1), (4, 1)][seed]
    bs, hd, B = [4, 16, 8, 16][seed], [8, 16, 12, 8][seed], 2 + seed % 2
    dtype = [torch.float32, torch.float32, torch.float16, torch.bfloat16][seed]
    lens = torch.randint(1, 3 * bs + 1, (B,), generator=gen).to(torch.int32)
    lens[0] = 1 if seed % 2 else 3 * bs                      # a one-token sequence / a full last block
    max_blocks = 4
    nb = B * max_blocks
    tables = torch.randperm(nb, generator=gen).view(B, max_blocks).to(torch.int32)
    key_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(dtype)
    value_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(dtype)
    query = torch.randn(B, nh, hd, generator=gen).to(dtype)
    repro = [f"gen = torch.Generator().manual_seed({seed})",  # noqa: F841 - shown on failure
             f"lens = torch.randint(1, {3 * bs + 1}, ({B},), generator=gen).to(torch.int32); lens[0] = {int(lens[0])}",
             f"tables = torch.randperm({nb}, generator=gen).view({B}, {max_blocks}).to(torch.int32)",
             f"key_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({dtype})",
             f"value_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({dtype})",
             f"query = torch.randn({B}, {nh}, {hd}, generator=gen).to({dtype})",
             f"out = paged_decode_attention(query, key_cache, value_cache, tables, lens, {hd ** -0.5!r})"]
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, hd ** -0.5)
    assert got.dtype == dtype and got.shape == query.shape
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype]
    torch.testing.assert_close(got.float(), reference(query, key_cache, value_cache, tables, lens, hd ** -0.5),
                               atol=tol, rtol=tol)


def test_scores_far_below_zero():
    """Every score is about -160: a running max that starts at 0 underflows the sum of exponentials."""
    gen = torch.Generator().manual_seed(11)
    bs, hd = 4, 8
    key_cache = 1 + 0.05 * torch.randn(3, bs, 1, hd, generator=gen)
    value_cache = torch.randn(3, bs, 1, hd, generator=gen)
    query = torch.full((1, 2, hd), -20.0)
    tables, lens = torch.tensor([[2, 0, 1]], dtype=torch.int32), torch.tensor([10], dtype=torch.int32)
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, 1.0)
    torch.testing.assert_close(got, reference(query, key_cache, value_cache, tables, lens, 1.0), atol=1e-5, rtol=1e-5)


def test_unwritten_slots_may_hold_nan():
    """Slots past seq_len in the last block were never written (NaN in a torch.empty cache): mask K and V loads."""
    gen = torch.Generator().manual_seed(12)
    bs, hd = 4, 8
    key_cache, value_cache = torch.randn(3, bs, 1, hd, generator=gen), torch.randn(3, bs, 1, hd, generator=gen)
    key_cache[0, 2:] = float("nan")
    value_cache[0, 2:] = float("nan")
    query = torch.randn(1, 2, hd, generator=gen)
    tables, lens = torch.tensor([[2, 0, 1]], dtype=torch.int32), torch.tensor([6], dtype=torch.int32)
    got = sub.paged_decode_attention(query, key_cache, value_cache, tables, lens, 0.5)
    assert not got.isnan().any(), f"NaN from slots past seq_len leaked into the output: {got.tolist()}"
    torch.testing.assert_close(got, reference(query, key_cache, value_cache, tables, lens, 0.5), atol=1e-5, rtol=1e-5)
