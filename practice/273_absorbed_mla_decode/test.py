"""Tests of exercise 273: absorbed MLA decode over the paged latent cache."""
import math

import pytest
import torch

import submission as sub

NAN = float("nan")


def example():
    kv_c_cache, k_pe_cache = torch.full((3, 2, 1, 2), NAN), torch.full((3, 2, 1, 1), NAN)
    kv_c_cache[2, 0, 0] = torch.tensor([1., 0.]); k_pe_cache[2, 0, 0] = 0.
    kv_c_cache[2, 1, 0] = torch.tensor([0., 1.]); k_pe_cache[2, 1, 0] = math.log(4.)
    kv_c_cache[0, 0, 0] = torch.tensor([1., 1.]); k_pe_cache[0, 0, 0] = 0.
    q_nope = torch.tensor([[[math.log(2.), 0.]], [[1., 1.]]])
    q_pe = torch.tensor([[[1.]], [[1.]]])
    return q_nope, q_pe, kv_c_cache, k_pe_cache, torch.tensor([[2, 0], [1, 1]], dtype=torch.int32)


def test_example():
    q_nope, q_pe, kv_c_cache, k_pe_cache, tables = example()
    out = sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables,
                                   torch.tensor([3, 0], dtype=torch.int32), 1.0)
    torch.testing.assert_close(out, torch.tensor([[[0.5, 0.75]], [[0.0, 0.0]]]), atol=1e-6, rtol=1e-6)


def reference(q_nope, q_pe, kv_c_cache, k_pe_cache, block_tables, seq_lens, scale):
    """Token by token through the block table, in float64."""
    bs = kv_c_cache.shape[1]
    out = torch.zeros(q_nope.shape, dtype=torch.float64)
    for b, n in enumerate(seq_lens.tolist()):
        if n == 0:
            continue
        slots = [(int(block_tables[b, t // bs]), t % bs) for t in range(n)]
        c = torch.stack([kv_c_cache[i, j, 0] for i, j in slots]).double()
        pe = torch.stack([k_pe_cache[i, j, 0] for i, j in slots]).double()
        scores = (q_nope[b].double() @ c.T + q_pe[b].double() @ pe.T) * scale
        out[b] = scores.softmax(-1) @ c
    return out


def paged_batch(seed, B, nh, L, R, bs, dtype=torch.float32, spare_blocks=3):
    """Random requests over a NaN-initialised cache; only each request's first seq_len slots are written.
    Each block-table row has one more column than it needs, pointing at another request's block or a NaN one."""
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, 4 * bs + 1, (B,), generator=g).to(torch.int32)
    lens[0] = 0 if B > 2 else lens[0]                          # a padding row in the bigger batches
    max_blocks = -(-int(lens.max()) // bs) + 1
    nb = B * max_blocks + spare_blocks
    order = torch.randperm(nb, generator=g)
    tables = order[:B * max_blocks].view(B, max_blocks).to(torch.int32)
    kv_c_cache = torch.full((nb, bs, 1, L), NAN, dtype=dtype)
    k_pe_cache = torch.full((nb, bs, 1, R), NAN, dtype=dtype)
    for b, n in enumerate(lens.tolist()):
        for t in range(n):
            kv_c_cache[tables[b, t // bs], t % bs, 0] = torch.randn(L, generator=g).to(dtype)
            k_pe_cache[tables[b, t // bs], t % bs, 0] = torch.randn(R, generator=g).to(dtype)
        used = -(-n // bs)
        tables[b, used:] = tables[(b + 1) % B, 0] if b % 2 else order[-1]   # another request's block, or a spare
    q_nope = torch.randn(B, nh, L, generator=g).to(dtype)
    q_pe = torch.randn(B, nh, R, generator=g).to(dtype)
    return q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens


PAGED_BATCH = "# paste paged_batch() from practice/273_absorbed_mla_decode/test.py (it needs import torch; NAN = float('nan'))"
CASES = [(2, 4, 16, 8, 4), (3, 2, 32, 16, 16), (4, 8, 8, 4, 1), (5, 1, 24, 8, 5), (3, 16, 64, 32, 8), (2, 3, 4, 2, 2)]


@pytest.mark.parametrize("seed", range(len(CASES)))
def test_random_ragged_batches(seed):
    B, nh, L, R, bs = CASES[seed]
    q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch(seed, B, nh, L, R, bs)
    scale = (L + R) ** -0.5 * (1 + seed)
    repro = [PAGED_BATCH,  # noqa: F841
             f"q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch({seed}, {B}, {nh}, {L}, {R}, {bs})",
             f"out = mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, {scale!r})"]
    got = sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, scale)
    assert got.dtype == torch.float32 and tuple(got.shape) == (B, nh, L)
    assert not got.isnan().any(), "NaN from the unwritten slots reached the output"
    torch.testing.assert_close(got.double(), reference(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, scale),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_absorbed_equals_expanded_attention(seed):
    # What the chapter teaches: with q_nope absorbed through W_UK and W_UV applied to the latent output, MLA decode
    # equals ordinary attention over the expanded keys [W_UK c, k_pe] and values W_UV c.
    g = torch.Generator().manual_seed(100 + seed)
    B, nh, L, R, dn, dv, bs = 3, 4, 16, 8, 12, 10, 4
    q_lat, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch(100 + seed, B, nh, L, R, bs)
    w_uk = torch.randn(nh, dn, L, generator=g, dtype=torch.float64) / L ** 0.5
    w_uv = torch.randn(nh, dv, L, generator=g, dtype=torch.float64) / L ** 0.5
    q_raw = torch.randn(B, nh, dn, generator=g, dtype=torch.float64)
    scale = (dn + R) ** -0.5
    repro = [PAGED_BATCH,  # noqa: F841
             f"q_nope_lat, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch({100 + seed}, {B}, {nh}, {L}, {R}, {bs})",
             f"g = torch.Generator().manual_seed({100 + seed})",
             f"w_uk = torch.randn({nh}, {dn}, {L}, generator=g, dtype=torch.float64) / {L} ** 0.5",
             f"w_uv = torch.randn({nh}, {dv}, {L}, generator=g, dtype=torch.float64) / {L} ** 0.5",
             f"q_raw = torch.randn({B}, {nh}, {dn}, generator=g, dtype=torch.float64)",
             "q_absorbed = torch.einsum('bhd,hdl->bhl', q_raw, w_uk).float()",
             f"latent = mla_decode_attention(q_absorbed, q_pe, kv_c_cache, k_pe_cache, tables, lens, {scale!r})",
             "out = torch.einsum('bhl,hvl->bhv', latent.double(), w_uv)   # compare with attention over expanded K, V"]
    q_absorbed = torch.einsum("bhd,hdl->bhl", q_raw, w_uk).float()          # W_UK^T q_nope
    latent = sub.mla_decode_attention(q_absorbed, q_pe, kv_c_cache, k_pe_cache, tables, lens, scale)
    got = torch.einsum("bhl,hvl->bhv", latent.double(), w_uv)               # then W_UV
    for b, n in enumerate(lens.tolist()):
        if n == 0:
            assert torch.equal(got[b], torch.zeros(nh, dv, dtype=torch.float64)), f"request {b} has length 0"
            continue
        slots = [(int(tables[b, t // bs]), t % bs) for t in range(n)]
        c = torch.stack([kv_c_cache[i, j, 0] for i, j in slots]).double()     # [n, L]
        pe = torch.stack([k_pe_cache[i, j, 0] for i, j in slots]).double()
        k_nope = torch.einsum("hdl,nl->hnd", w_uk, c)                        # expanded keys, per head
        v = torch.einsum("hvl,nl->hnv", w_uv, c)                             # expanded values
        scores = (torch.einsum("hd,hnd->hn", q_raw[b], k_nope) + q_pe[b].double() @ pe.T) * scale
        want = torch.einsum("hn,hnv->hv", scores.softmax(-1), v)
        torch.testing.assert_close(got[b], want, atol=1e-5, rtol=1e-5,
                                   msg=lambda m: f"request {b} (seq_len {n}): absorbed != expanded\n{m}")


def test_zero_length_rows_give_zeros():
    q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch(7, 4, 2, 8, 4, 4)
    lens = torch.tensor([0, int(lens[1]), 0, 0], dtype=torch.int32)
    tables[0] = tables[2] = tables[3] = int(tables[1, 0])   # padding rows pointing at real data
    got = sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.3)
    assert torch.equal(got[[0, 2, 3]], torch.zeros(3, 2, 8)), "a request of length 0 gives zeros"
    assert not got.isnan().any()
    only = sub.mla_decode_attention(q_nope[:1], q_pe[:1], kv_c_cache, k_pe_cache, tables[:1],
                                    torch.zeros(1, dtype=torch.int32), 0.3)
    assert torch.equal(only, torch.zeros(1, 2, 8)), "a batch of padding rows only gives zeros"


def test_nan_past_seq_len_in_the_same_block():
    # one block of 4, tokens 0-1 written, slots 2-3 NaN; block 1 all NaN in the unused column
    kv_c_cache, k_pe_cache = torch.full((2, 4, 1, 2), NAN), torch.full((2, 4, 1, 1), NAN)
    kv_c_cache[0, :2, 0] = torch.tensor([[1., 0.], [0., 1.]])
    k_pe_cache[0, :2, 0] = 0.
    got = sub.mla_decode_attention(torch.zeros(1, 1, 2), torch.zeros(1, 1, 1), kv_c_cache, k_pe_cache,
                                   torch.tensor([[0, 1]], dtype=torch.int32), torch.tensor([2], dtype=torch.int32), 1.0)
    torch.testing.assert_close(got, torch.tensor([[[0.5, 0.5]]]))


def test_the_rope_part_counts_and_the_scale_covers_both_parts():
    kv_c_cache, k_pe_cache = torch.zeros(1, 2, 1, 2), torch.zeros(1, 2, 1, 1)
    kv_c_cache[0, :, 0] = torch.tensor([[1., 0.], [0., 1.]])
    k_pe_cache[0, :, 0] = torch.tensor([[0.], [1.]])
    tables, lens = torch.tensor([[0]], dtype=torch.int32), torch.tensor([2], dtype=torch.int32)
    q_nope, q_pe = torch.tensor([[[2., 0.]]]), torch.tensor([[[4.]]])
    # scores: token 0 = s * 2, token 1 = s * 4
    for s in (1.0, 0.5, 0.1):
        got = sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, s)
        p1 = 1 / (1 + math.exp(-2 * s))
        torch.testing.assert_close(got, torch.tensor([[[1 - p1, p1]]]), atol=1e-6, rtol=1e-6,
                                   msg=lambda m: f"scale={s}: scores are scale * (q_nope . c + q_pe . k_pe)\n{m}")


def test_a_full_row_and_block_size_one():
    q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch(3, 3, 2, 8, 4, 1, spare_blocks=0)
    full = tables.shape[1]
    lens = torch.tensor([full, 1, full - 1], dtype=torch.int32)
    for b, n in enumerate(lens.tolist()):            # write every slot the rows now use
        for t in range(n):
            kv_c_cache[tables[b, t], 0, 0] = float(b + t) / 10
            k_pe_cache[tables[b, t], 0, 0] = float(t) / 10
    got = sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.5)
    torch.testing.assert_close(got.double(), reference(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.5),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs_softmax_in_fp32(dtype):
    # Computed in fp32 and rounded once, each entry is within one unit in the last place of the exact result
    # rounded to the dtype; a softmax or sums in bf16/fp16 are many units off.
    q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch(11, 3, 4, 32, 16, 8, dtype=dtype)
    lens[0] = 20
    for t in range(20):
        kv_c_cache[tables[0, t // 8], t % 8, 0] = torch.randn(32, generator=torch.Generator().manual_seed(t)).to(dtype)
        k_pe_cache[tables[0, t // 8], t % 8, 0] = torch.randn(16, generator=torch.Generator().manual_seed(99 + t)).to(dtype)
    tables[0, 3:] = tables[1, 0]
    q_nope, q_pe = q_nope * 2, q_pe * 2
    got = sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.2)
    assert got.dtype == dtype, f"returns q_nope's dtype {dtype}, got {got.dtype}"
    want = reference(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.2).to(dtype)
    torch.testing.assert_close(got.double(), want.double(), rtol=torch.finfo(dtype).eps, atol=1e-6,
                               msg=lambda m: f"{dtype} inputs: not computed in fp32?\n{m}")


def test_fp64_in_fp64_out():
    q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch(5, 2, 2, 8, 4, 4, dtype=torch.float64)
    got = sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.25)
    assert got.dtype == torch.float64, f"returns q_nope's dtype (fp64), got {got.dtype}"
    torch.testing.assert_close(got, reference(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.25),
                               atol=1e-5, rtol=1e-5)


def test_cache_is_not_modified():
    q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens = paged_batch(6, 3, 2, 8, 4, 4)
    before = kv_c_cache.clone(), k_pe_cache.clone()
    sub.mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, tables, lens, 0.3)
    assert torch.equal(kv_c_cache.nan_to_num(7.), before[0].nan_to_num(7.))
    assert torch.equal(k_pe_cache.nan_to_num(7.), before[1].nan_to_num(7.))


def good_args():
    return (torch.zeros(2, 4, 8), torch.zeros(2, 4, 4), torch.zeros(3, 4, 1, 8), torch.zeros(3, 4, 1, 4),
            torch.zeros(2, 2, dtype=torch.int32), torch.tensor([3, 8], dtype=torch.int32))


@pytest.mark.parametrize("change", [
    {0: torch.zeros(2, 4, 6)},                       # q_nope narrower than L
    {0: torch.zeros(3, 4, 8)},                       # q_nope for 3 requests, seq_lens for 2
    {0: torch.zeros(2, 8)},
    {1: torch.zeros(2, 4, 8)},                       # q_pe as wide as L
    {1: torch.zeros(2, 2, 4)},                       # q_pe with other heads
    {2: torch.zeros(3, 4, 2, 8), 3: torch.zeros(3, 4, 2, 4)},   # one entry per KV head: not MLA
    {3: torch.zeros(3, 2, 1, 4)},                    # the caches' block sizes differ
    {2: torch.zeros(3, 4, 8)},
    {4: torch.zeros(3, 2, dtype=torch.int32)},       # block_tables for 3 requests
    {4: torch.zeros(2, dtype=torch.int32)},
    {5: torch.tensor([3, 9], dtype=torch.int32)},    # 9 tokens do not fit in 2 blocks of 4
    {5: torch.tensor([-1, 2], dtype=torch.int32)},
])
def test_bad_input_raises(change):
    args = list(good_args())
    for i, value in change.items():
        args[i] = value
    sub.mla_decode_attention(*good_args(), 1.0)      # the good arguments are fine
    repro = {"shapes": [tuple(a.shape) for a in args], "seq_lens": args[5].tolist()}  # noqa: F841
    with pytest.raises(ValueError):
        sub.mla_decode_attention(*args, 1.0)
