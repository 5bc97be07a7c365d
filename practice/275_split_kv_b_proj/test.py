"""Tests of exercise 275: splitting kv_b_proj into each head's W_UK and W_UV."""
import pytest
import torch

import submission as sub


def test_example():
    weight = torch.arange(10.).repeat_interleave(2).view(10, 2)
    w_uk, w_uv = sub.split_kv_b_proj(weight, 2, 3, 2)
    assert w_uk[:, :, 0].tolist() == [[0., 1., 2.], [5., 6., 7.]]
    assert w_uv[:, :, 0].tolist() == [[3., 4.], [8., 9.]]
    assert tuple(w_uk.shape) == (2, 3, 2) and tuple(w_uv.shape) == (2, 2, 2)


def row_by_row(weight, nh, dn, dv):
    """Head h's W_UK is rows h*(dn+dv) .. h*(dn+dv)+dn-1, its W_UV the next dv rows."""
    w_uk = torch.stack([weight[h * (dn + dv) + i] for h in range(nh) for i in range(dn)]).view(nh, dn, -1)
    w_uv = torch.stack([weight[h * (dn + dv) + dn + i] for h in range(nh) for i in range(dv)]).view(nh, dv, -1)
    return w_uk, w_uv


@pytest.mark.parametrize("nh, dn, dv, rank", [(4, 8, 6, 16), (3, 5, 5, 7), (1, 4, 2, 8), (8, 16, 32, 12), (2, 1, 1, 3)])
def test_interleaved_per_head(nh, dn, dv, rank):
    weight = torch.randn(nh * (dn + dv), rank, generator=torch.Generator().manual_seed(nh * 100 + dn))
    repro = f"weight = torch.randn({nh * (dn + dv)}, {rank}, generator=torch.Generator().manual_seed({nh * 100 + dn}))"  # noqa: F841
    w_uk, w_uv = sub.split_kv_b_proj(weight, nh, dn, dv)
    want_uk, want_uv = row_by_row(weight, nh, dn, dv)
    assert tuple(w_uk.shape) == (nh, dn, rank), f"w_uk must be [nh, dn, L] = {(nh, dn, rank)}, got {tuple(w_uk.shape)}"
    assert tuple(w_uv.shape) == (nh, dv, rank), f"w_uv must be [nh, dv, L] = {(nh, dv, rank)}, got {tuple(w_uv.shape)}"
    assert torch.equal(w_uk, want_uk), "w_uk[h] must be head h's first dn rows"
    assert torch.equal(w_uv, want_uv), "w_uv[h] must be head h's last dv rows"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_contiguous_and_same_dtype(dtype):
    weight = torch.randn(3 * (4 + 6), 5, generator=torch.Generator().manual_seed(1)).to(dtype)
    w_uk, w_uv = sub.split_kv_b_proj(weight, 3, 4, 6)
    assert w_uk.dtype == dtype and w_uv.dtype == dtype, f"expected {dtype}, got {w_uk.dtype} and {w_uv.dtype}"
    assert w_uk.is_contiguous() and w_uv.is_contiguous(), "both results must be contiguous"
    want_uk, want_uv = row_by_row(weight, 3, 4, 6)
    assert torch.equal(w_uk, want_uk) and torch.equal(w_uv, want_uv)


@pytest.mark.parametrize("seed", range(3))
def test_absorbing_w_uk_gives_the_expanded_scores_and_outputs(seed):
    # Expanded (what transformers' expand_kv does): kv_b_proj(c) viewed as [S, nh, dn + dv], split into k_nope, v.
    # Absorbed: q_nope moved into the latent space with w_uk, attention over c, then w_uv on the output.
    g = torch.Generator().manual_seed(seed)
    nh, dn, dv, rank, seq = 4, 8, 6, 16, 5
    weight = torch.randn(nh * (dn + dv), rank, generator=g, dtype=torch.float64)
    c = torch.randn(seq, rank, generator=g, dtype=torch.float64)
    q_nope = torch.randn(nh, dn, generator=g, dtype=torch.float64)
    repro = (f"g = torch.Generator().manual_seed({seed}); "  # noqa: F841
             f"weight = torch.randn({nh * (dn + dv)}, {rank}, generator=g, dtype=torch.float64); "
             f"c = torch.randn({seq}, {rank}, generator=g, dtype=torch.float64); "
             f"q_nope = torch.randn({nh}, {dn}, generator=g, dtype=torch.float64); "
             f"w_uk, w_uv = split_kv_b_proj(weight, {nh}, {dn}, {dv})")
    kv = (c @ weight.T).view(seq, nh, dn + dv)
    k_nope, v = kv[..., :dn], kv[..., dn:]
    expanded_scores = torch.einsum("hd,shd->hs", q_nope, k_nope)
    expanded_out = torch.einsum("hs,shd->hd", expanded_scores.softmax(-1), v)

    w_uk, w_uv = sub.split_kv_b_proj(weight, nh, dn, dv)
    q_latent = torch.einsum("hd,hdl->hl", q_nope, w_uk)          # W_UK^T q_nope, once per head
    absorbed_scores = q_latent @ c.T
    torch.testing.assert_close(absorbed_scores, expanded_scores)
    latent_out = absorbed_scores.softmax(-1) @ c                 # [nh, L]: attention over the latent cache
    torch.testing.assert_close(torch.einsum("hl,hdl->hd", latent_out, w_uv), expanded_out)


@pytest.mark.parametrize("shape, nh, dn, dv", [
    ((24,), 2, 8, 4),               # not 2-D
    ((2, 24, 4), 2, 8, 4),
    ((26, 4), 2, 8, 4),             # 26 rows, not 2 * (8 + 4)
    ((48, 4), 2, 8, 4),             # the rows of 4 heads
    ((12, 4), 2, 8, 4),             # dv counted once, not per head
    ((24, 4), 2, 8, 5),
])
def test_bad_shape_raises(shape, nh, dn, dv):
    repro = f"split_kv_b_proj(torch.zeros{shape}, {nh}, {dn}, {dv})"  # noqa: F841
    with pytest.raises(ValueError):
        sub.split_kv_b_proj(torch.zeros(shape), nh, dn, dv)
