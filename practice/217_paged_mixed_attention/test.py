"""Tests of exercise 217: paged attention for a mixed batch."""
import pytest
import torch
import torch.nn.functional as F

import submission as sub


def test_example():
    key_cache, value_cache = torch.zeros(2, 4, 1, 1), torch.zeros(2, 4, 1, 1)
    value_cache[1, :3, 0, 0] = torch.tensor([3., 6., 9.])
    out = sub.paged_attention(torch.ones(2, 1, 1), key_cache, value_cache, torch.tensor([[1]], dtype=torch.int32),
                              torch.tensor([0, 2], dtype=torch.int32), torch.tensor([3], dtype=torch.int32), scale=1.0)
    torch.testing.assert_close(out, torch.tensor([[[4.5]], [[6.0]]]))


def test_more_queries_than_keys_is_an_error():
    cache = torch.zeros(1, 4, 1, 2)
    with pytest.raises(ValueError):
        sub.paged_attention(torch.zeros(3, 1, 2), cache, cache, torch.zeros(1, 1, dtype=torch.int32),
                            torch.tensor([0, 3], dtype=torch.int32), torch.tensor([2], dtype=torch.int32), 1.0)


def test_one_request_with_more_queries_than_keys_is_an_error():
    cache = torch.zeros(2, 4, 1, 2)
    tables = torch.tensor([[0, 1], [1, 0]], dtype=torch.int32)
    with pytest.raises(ValueError):       # 4 queries over 7 KV tokens in all, but request 1 has 3 for 2
        sub.paged_attention(torch.zeros(4, 1, 2), cache, cache, tables, torch.tensor([0, 1, 4], dtype=torch.int32),
                            torch.tensor([5, 2], dtype=torch.int32), 1.0)


def reference(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, scale):
    bs, group = key_cache.shape[1], query.shape[1] // key_cache.shape[2]
    out = torch.zeros(query.shape)
    for b, n in enumerate(seq_lens.tolist()):
        s, e = query_start_loc[b].item(), query_start_loc[b + 1].item()
        idx = [(int(block_tables[b, p // bs]), p % bs) for p in range(n)]
        k = torch.stack([key_cache[i, j] for i, j in idx]).float().repeat_interleave(group, 1).transpose(0, 1)
        v = torch.stack([value_cache[i, j] for i, j in idx]).float().repeat_interleave(group, 1).transpose(0, 1)
        allowed = torch.arange(n)[None, :] <= (n - (e - s) + torch.arange(e - s))[:, None]
        out[s:e] = F.scaled_dot_product_attention(query[s:e].float().transpose(0, 1), k, v, attn_mask=allowed,
                                                  scale=scale).transpose(0, 1)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_mixed_batches(seed):
    gen = torch.Generator().manual_seed(seed)
    nh, nkv = [(4, 4), (6, 2), (4, 1)][seed % 3]
    bs, hd = [4, 16][seed % 2], 8
    dtype = [torch.float32, torch.float32, torch.bfloat16][seed % 3]
    requests = [(0, 9), (17, 1), (2 * bs, 5), (bs + 3, 4), (0, 1)]     # (cached, new): prefill, decode, hit, chunk
    seq_lens = [c + q for c, q in requests]
    max_blocks = max(-(-n // bs) for n in seq_lens) + 1
    nb = len(requests) * max_blocks
    tables = torch.randperm(nb, generator=gen).view(len(requests), max_blocks).to(torch.int32)
    key_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(dtype)
    value_cache = torch.randn(nb, bs, nkv, hd, generator=gen).to(dtype)
    q_lens = [q for _, q in requests]
    query = torch.randn(sum(q_lens), nh, hd, generator=gen).to(dtype)
    qsl = torch.tensor([0] + torch.tensor(q_lens).cumsum(0).tolist(), dtype=torch.int32)
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    repro = [f"gen = torch.Generator().manual_seed({seed})",  # noqa: F841 - shown on failure
             f"tables = torch.randperm({nb}, generator=gen).view({len(requests)}, {max_blocks}).to(torch.int32)",
             f"key_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({dtype})",
             f"value_cache = torch.randn({nb}, {bs}, {nkv}, {hd}, generator=gen).to({dtype})",
             f"query = torch.randn({sum(q_lens)}, {nh}, {hd}, generator=gen).to({dtype})",
             f"query_start_loc = torch.tensor({qsl.tolist()}, dtype=torch.int32); seq_lens = torch.tensor({seq_lens}, dtype=torch.int32)",
             f"out = paged_attention(query, key_cache, value_cache, tables, query_start_loc, seq_lens, {hd ** -0.5!r})"]
    got = sub.paged_attention(query, key_cache, value_cache, tables, qsl, lens, hd ** -0.5)
    assert got.dtype == dtype and got.shape == query.shape
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), reference(query, key_cache, value_cache, tables, qsl, lens, hd ** -0.5),
                               atol=tol, rtol=tol)


def test_unused_columns_are_never_read_and_a_full_row_fits():
    gen = torch.Generator().manual_seed(5)
    bs, nkv, nh, hd = 4, 1, 2, 8
    key_cache, value_cache = torch.randn(5, bs, nkv, hd, generator=gen), torch.randn(5, bs, nkv, hd, generator=gen)
    tables = torch.tensor([[3, 0], [4, -1], [1, 10 ** 6]], dtype=torch.int32)
    lens = torch.tensor([2 * bs, 3, 1], dtype=torch.int32)           # row 0 exactly full
    qsl = torch.tensor([0, 5, 6, 7], dtype=torch.int32)
    query = torch.randn(7, nh, hd, generator=gen)
    got = sub.paged_attention(query, key_cache, value_cache, tables, qsl, lens, 0.5)
    want = reference(query, key_cache, value_cache, tables.clamp(0, 4), qsl, lens, 0.5)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_unwritten_slots_may_hold_nan():
    """The engine allocates its caches with torch.empty: slots past seq_len in the last block may be NaN."""
    gen = torch.Generator().manual_seed(8)
    bs, nkv, nh, hd = 4, 1, 2, 8
    key_cache, value_cache = torch.randn(5, bs, nkv, hd, generator=gen), torch.randn(5, bs, nkv, hd, generator=gen)
    tables = torch.tensor([[3, 0], [4, 2], [1, 2]], dtype=torch.int32)
    lens = torch.tensor([bs + 3, 3, 2], dtype=torch.int32)
    for block, first in ((0, 3), (4, 3), (1, 2)):              # the unwritten tail of each last block
        key_cache[block, first:] = float("nan")
        value_cache[block, first:] = float("nan")
    qsl = torch.tensor([0, 5, 6, 8], dtype=torch.int32)        # a chunk of 5, a decode, a whole prompt of 2
    query = torch.randn(8, nh, hd, generator=gen)
    got = sub.paged_attention(query, key_cache, value_cache, tables, qsl, lens, 0.5)
    assert not got.isnan().any(), f"NaN from slots past seq_len leaked into the output: {got.isnan().nonzero().tolist()}"
    torch.testing.assert_close(got, reference(query, key_cache, value_cache, tables, qsl, lens, 0.5),
                               atol=1e-5, rtol=1e-5)


def test_peaked_bf16_scores_need_fp32_arithmetic():
    """Large scores: rounding them to bf16 moves the softmax weights far more than the output's rounding."""
    gen = torch.Generator().manual_seed(3)
    bs, nkv, nh, hd = 16, 2, 4, 64
    key_cache = torch.randn(24, bs, nkv, hd, generator=gen).bfloat16()
    value_cache = torch.randn(24, bs, nkv, hd, generator=gen).bfloat16()
    tables = torch.randperm(24, generator=gen).view(2, 12).to(torch.int32)
    qsl, lens = torch.tensor([0, 1, 40], dtype=torch.int32), torch.tensor([190, 150], dtype=torch.int32)
    query = (16 * torch.randn(40, nh, hd, generator=gen)).bfloat16()
    got = sub.paged_attention(query, key_cache, value_cache, tables, qsl, lens, hd ** -0.5)
    assert got.dtype == torch.bfloat16
    want = reference(query, key_cache, value_cache, tables, qsl, lens, hd ** -0.5)
    torch.testing.assert_close(got.float(), want, atol=1e-2, rtol=8e-3)   # about two bf16 steps
