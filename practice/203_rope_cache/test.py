"""Tests of exercise 203: RoPE cos/sin cache and rotation."""
import math

import pytest
import torch

import submission as sub


def reference(x, positions, head_dim, theta, neox):
    """Independent check: rotate each plane as a complex number multiplied by e^{i p f}."""
    half = head_dim // 2
    freqs = torch.tensor([theta ** (-2 * i / head_dim) for i in range(half)], dtype=torch.float64)
    rot = torch.polar(torch.ones(len(positions), half, dtype=torch.float64),
                      positions.double()[:, None] * freqs)[:, None, :]
    xd = x.double()
    if neox:
        z = torch.complex(xd[..., :half], xd[..., half:]) * rot
        return torch.cat((z.real, z.imag), dim=-1)
    z = torch.complex(xd[..., 0::2], xd[..., 1::2]) * rot
    return torch.stack((z.real, z.imag), dim=-1).flatten(-2)


def test_example():
    cache = sub.rope_cos_sin_cache(head_dim=4, max_positions=8, theta=100.0)
    assert cache.shape == (8, 4) and cache.dtype == torch.float32
    expected = torch.tensor([math.cos(1), math.cos(0.1), math.sin(1), math.sin(0.1)])
    torch.testing.assert_close(cache[1], expected)
    x = torch.tensor([[[1.0, 0.0, 0.0, 0.0]]])
    c, s = math.cos(1), math.sin(1)
    torch.testing.assert_close(sub.apply_rope(x, torch.tensor([1]), cache), torch.tensor([[[c, 0.0, s, 0.0]]]))
    torch.testing.assert_close(sub.apply_rope(x, torch.tensor([1]), cache, neox=False),
                               torch.tensor([[[c, s, 0.0, 0.0]]]))


def test_cache_matches_the_formula():
    cache = sub.rope_cos_sin_cache(16, 50, theta=10000.0)
    ref = reference(torch.eye(16)[None, :1].expand(50, 1, 16), torch.arange(50), 16, 10000.0, True)[:, 0]
    # rotating e_0 gives (cos f_0 p) at dim 0 and (sin f_0 p) at dim d/2
    torch.testing.assert_close(cache[:, 0].double(), ref[:, 0])
    torch.testing.assert_close(cache[:, 8].double(), ref[:, 8])
    assert torch.equal(cache[0], torch.cat((torch.ones(8), torch.zeros(8))))


def test_the_table_is_bit_for_bit_the_one_transformers_builds():
    """transformers: inv_freq = 1 / base ** (arange(0, dim, 2) / dim) in fp32, then outer with the positions."""
    for head_dim, positions, theta in ((16, 50, 10000.0), (64, 300, 500000.0), (128, 40, 1e6), (8, 7, 10.0)):
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        angles = torch.outer(torch.arange(positions).float(), inv_freq)
        cache = sub.rope_cos_sin_cache(head_dim, positions, theta)
        assert cache.dtype == torch.float32 and cache.shape == (positions, head_dim)
        assert torch.equal(cache, torch.cat((angles.cos(), angles.sin()), dim=-1)), (head_dim, theta)
        assert torch.equal(sub.rope_cos_sin_cache(head_dim, positions, theta, None), cache)


@pytest.mark.parametrize("scaling", [
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 64},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32},
])
def test_scaling_takes_the_engines_frequencies_and_factor(scaling):
    from mini_platform.model.layers import rope_attention_factor, rope_inv_freq
    inv_freq = rope_inv_freq(32, 10000.0, scaling)
    angles = torch.outer(torch.arange(100).float(), inv_freq)
    expected = torch.cat((angles.cos(), angles.sin()), dim=-1) * rope_attention_factor(scaling)
    cache = sub.rope_cos_sin_cache(32, 100, 10000.0, scaling)
    torch.testing.assert_close(cache, expected, rtol=0, atol=1e-6)
    assert not torch.allclose(cache, sub.rope_cos_sin_cache(32, 100, 10000.0)), "scaling changes the table"


def test_odd_head_dim_is_rejected():
    with pytest.raises(ValueError):
        sub.rope_cos_sin_cache(7, 4, 10000.0)


@pytest.mark.parametrize("neox", [True, False])
def test_randomized_against_complex_rotation(neox):
    for head_dim, heads, theta in ((8, 3, 10000.0), (16, 1, 500.0), (32, 4, 1e6), (4, 2, 10.0)):
        gen = torch.Generator().manual_seed(203 + head_dim)
        cache = sub.rope_cos_sin_cache(head_dim, 300, theta)
        x = torch.randn(9, heads, head_dim, generator=gen)
        positions = torch.randint(0, 300, (9,), generator=gen)
        repro = (f"gen = torch.Generator().manual_seed({203 + head_dim}); x = torch.randn(9, {heads}, {head_dim}, generator=gen); "  # noqa: F841
                 f"positions = torch.randint(0, 300, (9,), generator=gen); "
                 f"out = apply_rope(x, positions, rope_cos_sin_cache({head_dim}, 300, {theta}), neox={neox})")
        before = x.clone()
        out = sub.apply_rope(x, positions, cache, neox=neox)
        assert torch.equal(x, before), "apply_rope must not modify its input"
        torch.testing.assert_close(out.double(), reference(x, positions, head_dim, theta, neox), atol=1e-4, rtol=1e-4)


def test_styles_differ():
    cache = sub.rope_cos_sin_cache(8, 10, 10000.0)
    x = torch.randn(3, 2, 8, generator=torch.Generator().manual_seed(1))
    pos = torch.tensor([1, 4, 9])
    assert not torch.allclose(sub.apply_rope(x, pos, cache, True), sub.apply_rope(x, pos, cache, False))


def test_dot_product_depends_only_on_distance():
    gen = torch.Generator().manual_seed(7)
    cache = sub.rope_cos_sin_cache(16, 64, 10000.0)
    q, k = torch.randn(1, 1, 16, generator=gen), torch.randn(1, 1, 16, generator=gen)
    dots = {}
    for m, n in ((5, 2), (20, 17), (40, 37), (3, 0)):
        qm = sub.apply_rope(q, torch.tensor([m]), cache)
        kn = sub.apply_rope(k, torch.tensor([n]), cache)
        dots[(m, n)] = float((qm * kn).sum())
    values = list(dots.values())
    assert max(values) - min(values) < 1e-4, dots
    far = float((sub.apply_rope(q, torch.tensor([9]), cache) * sub.apply_rope(k, torch.tensor([2]), cache)).sum())
    assert abs(far - values[0]) > 1e-3


def test_keeps_dtype_and_computes_in_float32():
    gen = torch.Generator().manual_seed(3)
    cache = sub.rope_cos_sin_cache(64, 4096, 10000.0)
    x = torch.randn(4, 2, 64, generator=gen).to(torch.bfloat16)
    pos = torch.tensor([4000, 1, 2047, 3])
    out = sub.apply_rope(x, pos, cache)
    assert out.dtype == torch.bfloat16
    expected = reference(x.float(), pos, 64, 10000.0, True)
    # within one bf16 rounding of the exact result (math done in bf16 is off by several roundings)
    assert float((out.double() - expected).abs().max()) <= 2 ** -8 * float(expected.abs().max())
